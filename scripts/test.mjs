// The project's one test command: build everything, then run every compiled
// test file with Node's test runner, plus the plain-JS tests of tools/ (the
// bundled base model's checks), of scripts/ (this runner's) and of bench/
// (that its scripts still find the modules they load). Arguments narrow the
// run to test files whose path contains any of them (e.g. `npm test -- engine`).
//
// The run provisions its PostgreSQL (one throwaway cluster, unless
// SVC_TEST_DATABASE_URL names a server) and ends with a summary of what it
// skipped, by missing piece (scripts/test-skips.mjs), after node's own totals.
// With SVC_TEST_REQUIRED_PIECES naming a file of pieces (.ci/run: .ci/enabled,
// what .ci/install enabled), a skip for one of them fails the run.
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { summarizeSkips } from "./test-skips.mjs";

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
candidates.push(...walk(join(root, "tools"), ".test.mjs"), ...walk(join(root, "scripts"), ".test.mjs"));
// bench/'s own tests sit at its top level (its subfolders hold peers' node_modules).
for (const name of readdirSync(join(root, "bench")))
  if (name.endsWith(".test.mjs")) candidates.push(join(root, "bench", name));
const files = candidates
  .map((f) => relative(root, f))
  .filter((rel) => filters.length === 0 || filters.some((x) => rel.includes(x)));
if (files.length === 0) {
  console.error("test: no test files matched");
  process.exit(1);
}
files.sort();
const concurrency = process.env.SVC_TEST_CONCURRENCY ?? "2";
const distModule = (path) => import(pathToFileURL(join(root, "packages", path)).href);
const { missingPieceOf, MISSING_PIECES } = await distModule("engine/dist/src/testing/missing-piece.js");
const requiredFile = process.env.SVC_TEST_REQUIRED_PIECES;
const required = requiredFile
  ? readFileSync(requiredFile, "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
  : null;

// One PostgreSQL cluster for every test process of the run, which a test file
// reaches through SVC_TEST_DATABASE_URL (packages/server/test/postgres-cluster.ts).
// Only the server's and the CLI's tests use one; a file run without it starts its own.
const env = { ...process.env };
let cluster = null;
if (!env.SVC_TEST_DATABASE_URL && files.some((f) => /^packages\/(server|svc)\//.test(f))) {
  try {
    const { startPostgresCluster } = await distModule("server/dist/test/postgres-cluster.js");
    cluster = await startPostgresCluster();
    env.SVC_TEST_DATABASE_URL = cluster.url;
    console.log(`# PostgreSQL for this run: a throwaway cluster at ${cluster.url}`);
  } catch (error) {
    console.log(
      `# PostgreSQL for this run: none (${error.message.split("\n")[0]}); the tests that need it will fail`,
    );
  }
}

const skipLog = join(tmpdir(), `svc-test-skips-${process.pid}.jsonl`);
const reporter = process.stdout.isTTY ? "spec" : "tap"; // node's own default
// The runner and everything its tests start form one process group, so a
// test that never settles (a child it waits on forever) ends the run at the
// deadline with a message instead of holding CI until its own limit.
const deadlineMin = Number(process.env.SVC_TEST_DEADLINE_MIN ?? 60);
const run = spawn(
  "node",
  [
    "--test",
    `--test-concurrency=${concurrency}`,
    ...[`--test-reporter=${reporter}`, "--test-reporter-destination=stdout"],
    ...[
      `--test-reporter=${pathToFileURL(join(root, "scripts/test-skips.mjs")).href}`,
      `--test-reporter-destination=${skipLog}`,
    ],
    ...files,
  ],
  { stdio: "inherit", cwd: root, detached: true, env },
);
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
run.on("exit", async (code, signal) => {
  clearTimeout(deadline);
  stopAll("SIGKILL"); // whatever a test left running
  await cluster?.stop();
  const skips = summarizeSkips({
    logFile: skipLog,
    root,
    missingPieceOf,
    knownPieces: MISSING_PIECES,
    required,
  });
  rmSync(skipLog, { force: true });
  for (const line of skips.lines) console.log(line);
  for (const failure of skips.failures) console.log(`# skip check failed (${requiredFile}): ${failure}`);
  const status = code ?? (signal ? 1 : 0);
  process.exit(status === 0 && skips.failures.length > 0 ? 1 : status);
});
