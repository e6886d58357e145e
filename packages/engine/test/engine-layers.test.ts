// The engine's folders keep the directions docs/architecture.md describes:
// no two source files import each other (directly or round a loop), the graph
// knows no loader, trainer or generator, the grammar does not reach into
// generation, and the kernels and family modules stand on their own. Imports
// include `import type` and inline `import("…")` types: a type loop is still a
// seam that does not hold.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src");
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"(\.{1,2}\/[^"]+)"/g;

function sourceFiles(dir: string, prefix = ""): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    const rel = prefix ? `${prefix}/${name}` : name;
    if (statSync(p).isDirectory()) return name === "fixtures" || rel === "testing" ? [] : sourceFiles(p, rel);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [rel] : [];
  });
}

const files = sourceFiles(SRC);
const imports = new Map<string, string[]>(
  files.map((f) => [
    f,
    [...readFileSync(join(SRC, f), "utf8").matchAll(SPECIFIER)].map((m) =>
      posix.normalize(posix.join(posix.dirname(f), m[1])).replace(/\.js$/, ".ts"),
    ),
  ]),
);

/** The import loops: strongly connected groups of more than one file (Tarjan). */
function loops(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const f of graph.keys()) if (!index.has(f)) visit(f);
  return found;
}

/** Imports from files in `folder` that reach any of `forbidden` (folders, or files at the top). */
function reaching(folder: string, forbidden: string[]): string[] {
  const out: string[] = [];
  for (const [file, deps] of imports) {
    if (!file.startsWith(`${folder}/`)) continue;
    for (const dep of deps)
      if (forbidden.some((f) => dep === f || dep.startsWith(`${f}/`))) out.push(`${file} imports ${dep}`);
  }
  return out;
}

test("the engine's layout is read: its folders and their files", () => {
  for (const folder of ["graph", "loading", "adapters", "text", "data", "training", "generation"])
    assert.ok(
      files.some((f) => f.startsWith(`${folder}/`)),
      `no source file under src/${folder}/`,
    );
  assert.ok(imports.get("generation/generate.ts")!.includes("constrained/constraint.ts"));
  // the loop finder finds a loop of two and one of three, and nothing in a chain
  const sample = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["a.ts", "c.ts"]],
    ["c.ts", ["d.ts"]],
    ["d.ts", ["e.ts"]],
    ["e.ts", ["c.ts"]],
    ["f.ts", ["a.ts"]],
  ]);
  assert.deepEqual(loops(sample).sort(), [
    ["a.ts", "b.ts"],
    ["c.ts", "d.ts", "e.ts"],
  ]);
});

test("no import loop among the engine's source files", () => {
  assert.deepEqual(loops(imports), []);
});

test("the graph, the grammar, the kernels and the family modules import only what lies beneath them", () => {
  assert.deepEqual(
    reaching("graph", ["loading", "adapters", "data", "training", "generation", "text", "export"]),
    [],
  );
  assert.deepEqual(reaching("constrained", ["generation", "training", "graph", "loading"]), []);
  assert.deepEqual(
    files
      .filter((f) => f.startsWith("kernels/"))
      .flatMap((f) => imports.get(f)!.filter((d) => !d.startsWith("kernels/"))),
    [],
  );
  assert.deepEqual(
    files
      .filter((f) => f.startsWith("families/"))
      .flatMap((f) => imports.get(f)!.filter((d) => !d.startsWith("families/") && d !== "errors.ts")),
    [],
  );
});
