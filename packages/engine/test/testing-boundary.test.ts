// Test support stays out of the product: no file under packages/*/src other
// than a test (*.test.ts) and the engine's own testing/ folder may import
// @svc/engine/testing or a path into packages/engine/src/testing/. Tests,
// packages/*/test, bench/ and scripts/ may.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
const TESTING_DIR = join(ROOT, "packages", "engine", "src", "testing");
const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']/g;

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "node_modules" && name !== "fixtures" && p !== TESTING_DIR) yield* sources(p);
    } else if (SOURCE.test(name) && !/\.test\.[a-z]+$/.test(name)) yield p;
  }
}

/** The specifiers in `text` (a file at `file`) that reach test support. */
function testingImports(file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)]
    .map((m) => m[1])
    .filter((spec) => {
      if (spec === "@svc/engine/testing" || spec.startsWith("@svc/engine/testing/")) return true;
      if (spec.includes("engine/dist/src/testing/") || spec.includes("engine/src/testing/")) return true;
      if (!spec.startsWith(".")) return false;
      const target = resolve(dirname(file), spec);
      return target === TESTING_DIR || target.startsWith(TESTING_DIR + sep);
    });
}

test("the check sees each way of reaching test support, and nothing else", () => {
  const file = join(ROOT, "packages", "engine", "src", "generation", "generate.ts");
  assert.deepEqual(testingImports(file, 'import { needs } from "@svc/engine/testing";'), [
    "@svc/engine/testing",
  ]);
  assert.deepEqual(testingImports(file, 'export { x } from "../testing/random-model.js";'), [
    "../testing/random-model.js",
  ]);
  assert.deepEqual(testingImports(file, 'await import("../testing/index.js")'), ["../testing/index.js"]);
  assert.deepEqual(testingImports(file, 'import { loadModel } from "@svc/engine";\nimport "../rng.js";'), []);
});

test("no product file under packages/*/src imports test support", () => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const pkg of readdirSync(join(ROOT, "packages"))) {
    const src = join(ROOT, "packages", pkg, "src");
    try {
      statSync(src);
    } catch {
      continue;
    }
    for (const file of sources(src)) {
      scanned++;
      for (const spec of testingImports(file, readFileSync(file, "utf8")))
        offenders.push(`${relative(ROOT, file)} imports ${spec}`);
    }
  }
  assert.ok(scanned > 100, `only ${scanned} source files found under packages/*/src`);
  assert.deepEqual(offenders, []);
});
