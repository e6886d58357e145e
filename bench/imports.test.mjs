// The benchmarks load the built packages by path, not through a package entry
// (they time internals such as ModelGraph and the kernels): a module that
// moves breaks them silently, since no test runs them. This reads every
// bench/*.mjs for the built modules it loads, statically or through
// join(dist, ...), and checks that each one exists after the build.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const engineSrc = join(here, "..", "packages", "engine", "dist", "src");

/** The built files a bench script loads: relative `…/dist/…js` specifiers and join(dist, "a", "b.js") calls. */
function loadedModules(source) {
  const found = [];
  for (const [, spec] of source.matchAll(/["'](\.\.\/packages\/[^"']*\/dist\/[^"']+\.js)["']/g))
    found.push(resolve(here, spec));
  for (const [, args] of source.matchAll(/join\(dist,\s*((?:"[^"]+",?\s*)+)\)/g))
    found.push(join(engineSrc, ...[...args.matchAll(/"([^"]+)"/g)].map((m) => m[1])));
  return found;
}

test("every built module a bench script loads exists", () => {
  assert.ok(existsSync(engineSrc), "the engine is built (npm run build)");
  const scripts = readdirSync(here).filter((n) => n.endsWith(".mjs") && !n.endsWith(".test.mjs"));
  let checked = 0;
  const missing = [];
  for (const name of scripts) {
    for (const file of loadedModules(readFileSync(join(here, name), "utf8"))) {
      checked++;
      if (!existsSync(file)) missing.push(`${name}: ${file}`);
    }
  }
  assert.ok(checked > 50, `${checked} module paths found in ${scripts.length} scripts`);
  assert.deepEqual(missing, []);
});
