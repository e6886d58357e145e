// The project's one test command: build everything, then run every compiled
// test file with Node's test runner, plus the plain-JS tests of tools/ (the
// bundled base model's checks). Arguments narrow the run to test files
// whose path contains any of them (e.g. `npm test -- engine`).
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const filters = process.argv.slice(2);

if (!process.env.SVC_TEST_NO_BUILD) {
  const b = spawnSync("node", [join(root, "scripts/build.mjs")], { stdio: "inherit", cwd: root });
  if (b.status !== 0) process.exit(b.status ?? 1);
}

function* walk(dir, suffix) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules") continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p, suffix);
    else if (name.endsWith(suffix)) yield p;
  }
}

const candidates = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  const dist = join(root, "packages", pkg, "dist");
  try {
    statSync(dist);
  } catch {
    continue;
  }
  candidates.push(...walk(dist, ".test.js"));
}
candidates.push(...walk(join(root, "tools"), ".test.mjs"));
const files = candidates
  .map((f) => relative(root, f))
  .filter((rel) => filters.length === 0 || filters.some((x) => rel.includes(x)));
if (files.length === 0) {
  console.error("test: no test files matched");
  process.exit(1);
}
files.sort();
const concurrency = process.env.SVC_TEST_CONCURRENCY ?? "2";
// The runner and everything its tests start form one process group, so a
// test that never settles (a child it waits on forever) ends the run at the
// deadline with a message instead of holding CI until its own limit.
const deadlineMin = Number(process.env.SVC_TEST_DEADLINE_MIN ?? 60);
const run = spawn("node", ["--test", `--test-concurrency=${concurrency}`, ...files], {
  stdio: "inherit",
  cwd: root,
  detached: true,
});
const stopAll = (signal) => {
  try {
    process.kill(-run.pid, signal);
  } catch {
    // the group is already gone
  }
};
const deadline = setTimeout(() => {
  console.error(
    `test: the run passed its ${deadlineMin}-minute deadline (SVC_TEST_DEADLINE_MIN); stopping it`,
  );
  stopAll("SIGKILL");
}, deadlineMin * 60_000);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stopAll(signal));
run.on("exit", (code, signal) => {
  clearTimeout(deadline);
  stopAll("SIGKILL"); // whatever a test left running
  process.exit(code ?? (signal ? 1 : 0));
});
