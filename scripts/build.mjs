// Builds every part of the monorepo in dependency order: the engine's native
// kernels (optional: the engine falls back to portable kernels without them),
// the TypeScript packages, then the Studio web app.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
  return r.status === 0;
}

const only = process.argv.slice(2);
const want = (part) => only.length === 0 || only.includes(part);

if (want("native") && existsSync(join(root, "packages/engine/native/binding.gyp"))) {
  const ok = run("node", [join(root, "packages/engine/scripts/build-native.mjs")]);
  if (!ok) console.warn("build: native kernels did not build; the engine will use its portable kernels");
}
if (want("ts") && !run("npx", ["tsc", "-b"])) process.exit(1);
if (want("studio") && existsSync(join(root, "packages/studio/index.html"))) {
  if (!run("npm", ["run", "build", "-w", "@svc/studio"])) process.exit(1);
}
