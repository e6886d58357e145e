// Builds the native kernels for the sanitizer tests with g++ directly (no
// node-gyp), into packages/engine/native/build/Sanitize/ (the Release addon is
// left alone):
//   svc_kernels.node   the addon with AddressSanitizer + UndefinedBehaviorSanitizer
//   pool_stress        native/test/pool_stress.cc linked against thread_pool.cc
//                      and the ISA units, -O2
//   pool_stress-tsan   the same with ThreadSanitizer
// Each ISA unit is compiled with its own flags from binding.gyp. An object is
// rebuilt only when its command or a source under native/ changed.
//
//   node packages/engine/scripts/build-sanitized.mjs [addon] [stress] [stress-tsan]
//        [--pool=FILE] [--out=DIR]
// (no target: all three). --pool builds the stress test against another
// thread_pool.cc (to check that it catches a broken pool), --out writes elsewhere.
//
// The addon needs the ASan runtime loaded first:
//   LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
//   SVC_KERNELS_ADDON=packages/engine/native/build/Sanitize/svc_kernels.node node ...
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const scriptPath = fileURLToPath(import.meta.url);
const nativeDir = join(dirname(scriptPath), "../native");

const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const targets = args.filter((a) => !a.startsWith("--"));
for (const t of targets)
  if (!["addon", "stress", "stress-tsan"].includes(t)) {
    console.error(`build-sanitized: unknown target "${t}" (addon, stress, stress-tsan)`);
    process.exit(2);
  }
const want = (t) => targets.length === 0 || targets.includes(t);
const outDir = resolve(option("out") ?? join(nativeDir, "build/Sanitize"));
const poolSource = resolve(option("pool") ?? join(nativeDir, "src/thread_pool.cc"));

/** binding.gyp's base flags (target_defaults) and each ISA unit's source and extra flags. */
function readBindingGyp() {
  const text = readFileSync(join(nativeDir, "binding.gyp"), "utf8")
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n");
  const gyp = JSON.parse(text);
  const x64 = process.arch === "x64";
  const targets = [...gyp.targets];
  for (const [cond, body] of gyp.conditions ?? [])
    if (cond === "target_arch=='x64'" && x64) targets.push(...(body.targets ?? []));
  const base = gyp.target_defaults.cflags_cc.filter((f) => !/^-O/.test(f));
  if (x64) base.push("-DSVC_X86"); // target_defaults: conditions
  const units = targets
    .filter((t) => t.target_name.startsWith("svc_isa_"))
    .map((t) => ({ source: join(nativeDir, t.sources[0]), flags: t.cflags_cc ?? [] }));
  return { base, units };
}

/** Node's headers (node_api.h), for the addon. */
function nodeIncludeDir() {
  const candidates = [
    "/usr/include/node",
    join(dirname(process.execPath), "../include/node"),
    join(process.env.HOME ?? "", `.cache/node-gyp/${process.versions.node}/include/node`),
  ];
  return candidates.find((d) => existsSync(join(d, "node_api.h")));
}

function newestInput() {
  let t = statSync(scriptPath).mtimeMs;
  for (const dir of ["src", "test"])
    for (const name of readdirSync(join(nativeDir, dir)))
      t = Math.max(t, statSync(join(nativeDir, dir, name)).mtimeMs);
  return Math.max(t, statSync(poolSource).mtimeMs, statSync(join(nativeDir, "binding.gyp")).mtimeMs);
}
const inputsChanged = newestInput();

function run(argv) {
  return new Promise((done, fail) => {
    const p = spawn(argv[0], argv.slice(1), { stdio: "inherit" });
    p.on("error", fail);
    p.on("exit", (code) =>
      code === 0 ? done() : fail(new Error(`build-sanitized: failed (${code}): ${argv.join(" ")}`)),
    );
  });
}

/** Runs argv to make `out` unless out is newer than every input (and deps) and came from the same command. */
async function make(out, argv, deps = []) {
  const cmdFile = `${out}.cmd`;
  const cmd = argv.join(" ");
  const newest = Math.max(inputsChanged, ...deps.map((d) => statSync(d).mtimeMs));
  if (existsSync(out) && statSync(out).mtimeMs > newest && existsSync(cmdFile)) {
    if (readFileSync(cmdFile, "utf8") === cmd) return;
  }
  mkdirSync(dirname(out), { recursive: true });
  await run(argv);
  writeFileSync(cmdFile, cmd);
}

/** Runs the jobs (functions returning promises) at most `width` at a time. */
async function inParallel(jobs, width = availableParallelism()) {
  const queue = [...jobs];
  const worker = async () => {
    while (queue.length) await queue.shift()();
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));
}

const { base, units } = readBindingGyp();
const cxx = process.env.CXX || "g++";

const variants = {
  addon: {
    flags: [
      "-O1",
      "-g",
      "-fsanitize=address,undefined",
      "-fno-omit-frame-pointer",
      "-fno-sanitize-recover=undefined",
      "-pthread",
    ],
    sources: [join(nativeDir, "src/addon.cc"), poolSource],
    link: ["-shared", "-fsanitize=address,undefined", "-pthread"],
    out: "svc_kernels.node",
  },
  stress: {
    flags: ["-O2", "-pthread"],
    sources: [join(nativeDir, "test/pool_stress.cc"), poolSource],
    link: ["-pthread"],
    out: "pool_stress",
  },
  "stress-tsan": {
    flags: ["-O1", "-g", "-fsanitize=thread", "-pthread"],
    sources: [join(nativeDir, "test/pool_stress.cc"), poolSource],
    link: ["-fsanitize=thread", "-pthread"],
    out: "pool_stress-tsan",
  },
};

const chosen = Object.keys(variants).filter(want);
let include = [];
if (chosen.includes("addon")) {
  const dir = nodeIncludeDir();
  if (!dir) {
    console.error("build-sanitized: Node's headers (node_api.h) not found; cannot build the addon");
    process.exit(1);
  }
  include = [`-I${dir}`];
}

const compiles = [];
const links = [];
for (const name of chosen) {
  const v = variants[name];
  const objDir = join(outDir, "obj", name);
  const objects = [];
  const compile = (source, extra) => {
    const obj = join(objDir, `${basename(source, ".cc")}.o`);
    objects.push(obj);
    const inc = [`-I${join(nativeDir, "src")}`, ...(name === "addon" ? include : [])];
    compiles.push(() => make(obj, [cxx, ...base, ...v.flags, ...extra, ...inc, "-c", source, "-o", obj]));
  };
  for (const u of units) compile(u.source, u.flags);
  for (const s of v.sources) compile(s, []);
  const out = join(outDir, v.out);
  links.push(() => make(out, [cxx, ...v.link, ...objects, "-o", out], objects));
}

try {
  await inParallel(compiles);
  await inParallel(links);
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
for (const name of chosen) console.log(`build-sanitized: ${join(outDir, variants[name].out)}`);
