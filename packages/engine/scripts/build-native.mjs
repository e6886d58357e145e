// Builds the engine's kernels from packages/engine/native, offline:
// - the native addon with node-gyp (Node's headers from /usr/include/node when
//   present, so nothing is downloaded);
// - the WebAssembly SIMD module of the portable kernels with clang + wasm-ld,
//   when they exist (without them the portable kernels run as plain JS).
// Exits non-zero when the addon does not build; the root build only warns then,
// and the engine uses its portable kernels.
//
//   node packages/engine/scripts/build-native.mjs [--rebuild]
//   node packages/engine/scripts/build-native.mjs --sanitize
// --sanitize builds the ASan/UBSan addon into native/build/Sanitize/ instead
// (build-sanitized.mjs; the Release build is left alone).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const engineDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const nativeDir = join(engineDir, "native");

if (process.argv.includes("--sanitize")) {
  const script = join(engineDir, "scripts/build-sanitized.mjs");
  process.exit(spawnSync(process.execPath, [script, "addon"], { stdio: "inherit" }).status ?? 1);
}

/** node-gyp: this package's devDependency if installed, else the copy bundled with npm. */
function findNodeGyp() {
  try {
    return createRequire(join(engineDir, "package.json")).resolve("node-gyp/bin/node-gyp.js");
  } catch {}
  const candidates = [
    join(dirname(process.execPath), "../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"),
    "/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js",
    "/usr/share/nodejs/node-gyp/bin/node-gyp.js",
  ];
  const npmRoot = spawnSync("npm", ["root", "-g"], { encoding: "utf8" });
  if (npmRoot.status === 0)
    candidates.push(join(npmRoot.stdout.trim(), "npm/node_modules/node-gyp/bin/node-gyp.js"));
  return candidates.find((p) => existsSync(p));
}

function nodeGyp(gyp, args) {
  const extra = [];
  if (existsSync("/usr/include/node/node_api.h")) extra.push("--nodedir=/usr");
  const r = spawnSync(process.execPath, [gyp, ...args, ...extra], { cwd: nativeDir, stdio: "inherit" });
  return r.status === 0;
}

function buildWasm() {
  const clang = ["clang++", "clang++-16", "clang++-15", "clang++-14"].find(
    (c) => spawnSync(c, ["--version"], { stdio: "ignore" }).status === 0,
  );
  if (!clang) {
    console.warn("build-native: clang++ not found; the portable kernels will run as plain JS");
    return;
  }
  const outDir = join(nativeDir, "build/wasm");
  mkdirSync(outDir, { recursive: true });
  // No libc: the module imports nothing; memory grows from __heap_base.
  const flags = [
    "--target=wasm32",
    "-std=c++17",
    "-O3",
    "-msimd128",
    "-mbulk-memory",
    "-fno-exceptions",
    "-fno-rtti",
    "-ffreestanding",
    "-nostdlib",
    "-fno-math-errno",
    "-Wl,--no-entry",
    "-Wl,--strip-all",
  ];
  const out = join(outDir, "svc_kernels.wasm");
  const r = spawnSync(clang, [...flags, "-o", out, join(nativeDir, "src/wasm_main.cc")], {
    stdio: "inherit",
  });
  if (r.status === 0) console.log("build-native: built packages/engine/native/build/wasm/svc_kernels.wasm");
  else
    console.warn(
      "build-native: the WebAssembly kernels did not build (is wasm-ld installed?); the portable kernels will run as plain JS",
    );
}

// node-gyp first: its rebuild empties native/build, where the wasm module goes too.
const gyp = findNodeGyp();
let ok = false;
if (!gyp) {
  console.warn("build-native: node-gyp not found (install it or npm); skipping the native kernels addon");
} else {
  const makefile = join(nativeDir, "build/Makefile");
  const fresh =
    process.argv.includes("--rebuild") ||
    !existsSync(makefile) ||
    statSync(join(nativeDir, "binding.gyp")).mtimeMs > statSync(makefile).mtimeMs;
  ok = fresh ? nodeGyp(gyp, ["rebuild", "-j", "2"]) : nodeGyp(gyp, ["build", "-j", "2"]);
  if (ok) console.log("build-native: built packages/engine/native/build/Release/svc_kernels.node");
  else console.warn("build-native: the native kernels addon failed to build");
}
buildWasm();
process.exit(ok ? 0 : 1);
