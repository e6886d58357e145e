// The cloud API goes away while `svc start` follows a job (issue 17), every
// process real: the local server svc started is killed with SIGKILL mid-run
// and restarted by the CLI, which follows the job on from its last event; a
// remote API that stays down makes svc start give up after SVC_API_GIVE_UP_MS
// with the command that resumes following, which works once the API is back.
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { needs } from "@svc/engine/testing";
import {
  cliEnv,
  createTestModel,
  freePort,
  HAS_SCRIPT,
  ptyArgs,
  REPO_ROOT,
  runSvc,
  SVC_BIN,
  startProcess,
  startTestServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

// Big enough that 60 steps take seconds even on a quiet machine, so the kill lands mid-run.
let model: string;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  model = await createTestModel({ hiddenSize: 128, intermediateSize: 256, numHiddenLayers: 4 });
});

after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function makeProject(): Promise<string> {
  const dir = await tempDir("outage-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 16 }, (_, i) => ({ messages: [{ role: "user", content: ("question " + i + " ").repeat(12) }, { role: "assistant", content: ("answer " + i + " ").repeat(12) }] }));
export default createSvc({ trainer: createTrainer({ name: "outage", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, maxSteps: 60, saveSteps: 10, batchSize: 4 }) });
`,
  );
  return dir;
}

/** A HOME whose auto-started local server listens on free ports and serves the test model. */
async function localHome(): Promise<{ home: string; env: NodeJS.ProcessEnv }> {
  const home = await tempDir("outage-home");
  const env = cliEnv(home, null, {
    SVC_LOCAL_API_PORT: String(await freePort()),
    SVC_LOCAL_EDGE_PORT: String(await freePort()),
    SVC_MODELS: `${TEST_MODEL}=${model}`,
    COLUMNS: "120",
  });
  cleanups.push(async () => {
    const rec = await serverRecord(home).catch(() => null);
    await runSvc(["server", "stop"], { cwd: home, env });
    if (rec) killIfAlive(rec.pid);
  });
  return { home, env };
}

async function serverRecord(home: string): Promise<{ pid: number; apiUrl: string }> {
  return JSON.parse(await readFile(join(home, ".svc", "server", "server.json"), "utf8"));
}

function killIfAlive(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

const LOST_LOCAL =
  /lost the local server at http:\/\/127\.0\.0\.1:\d+ \(connection (refused|reset)\); restarting it \(log: \S+\/\.svc\/server\/server\.log\)/;

/** svc start with the local server killed after the first checkpoint; returns the run and its timings. */
async function killLocalServerDuringStart(onTerminal: boolean) {
  const { home, env } = await localHome();
  const project = await makeProject();
  const svcStart = [process.execPath, SVC_BIN, "start"];
  const p = onTerminal
    ? startProcess("script", ptyArgs(svcStart.map((a) => `'${a}'`).join(" ")), {
        cwd: project,
        env,
      })
    : startProcess(svcStart[0], svcStart.slice(1), { cwd: project, env });
  cleanups.push(async () => p.child.kill("SIGKILL"));
  await p.waitFor(/checkpoint saved at step 10 /);
  const killed = await serverRecord(home);
  const killedAt = Date.now();
  process.kill(killed.pid, "SIGKILL");
  await p.waitFor(LOST_LOCAL, 30_000);
  const detectMs = Date.now() - killedAt;
  await p.waitFor(/restarted the local server \(pid \d+\)/, 90_000);
  const restartMs = Date.now() - killedAt;
  const r = await p.done;
  const log = await readFile(join(home, ".svc", "server", "server.log"), "utf8");
  return { home, env, project, r, out: p.output(), killed, detectMs, restartMs, log };
}

function checkServerSide(run: Awaited<ReturnType<typeof killLocalServerDuringStart>>) {
  const { out, killed, log } = run;
  assert.match(
    out,
    new RegExp(`restarted the local server \\(pid \\d+\\); pid ${killed.pid} had died without a clean exit`),
  );
  assert.match(out, /the cloud API is back after \d+s; following the job from event \d+/);
  assert.match(out, /done: job \S+ \(adapter: final\)/);
  // What the server could not log itself, the CLI that watched it die did.
  assert.match(log, new RegExp(`the local server pid ${killed.pid} was killed by SIGKILL`));
  assert.match(log, /re-queued to resume from checkpoint-\d+/);
}

test("kill -9 of the auto-started server during svc start (plain lines): notice, restart, the job completes", async (t) => {
  const run = await killLocalServerDuringStart(false);
  assert.equal(run.r.code, 0, run.out);
  checkServerSide(run);
  const out = run.out;
  const notice = out.search(LOST_LOCAL);
  const stepsAfter = [...out.slice(notice).matchAll(/^step (\d+)\/60/gm)].map((m) => Number(m[1]));
  assert.ok(stepsAfter.length > 0 && stepsAfter[0] >= 10, `steps go on from the checkpoint: ${stepsAfter}`);
  assert.equal(stepsAfter.at(-1), 60);
  assert.match(out, /completed: \d+ artifacts, 60 steps/);
  t.diagnostic(`plain: notice ${run.detectMs} ms after the kill, server restarted after ${run.restartMs} ms`);

  // A clean stop removes the pid/port file; a server killed with nobody watching leaves it, recognised as stale.
  const { home, env, project } = run;
  const second = await serverRecord(home);
  assert.notEqual(second.pid, run.killed.pid);
  process.kill(second.pid, "SIGKILL");
  await new Promise((r) => setTimeout(r, 300));
  const status = await runSvc(["server", "status"], { cwd: home, env });
  assert.equal(status.code, 1);
  assert.match(
    status.stdout,
    new RegExp(
      `not answering \\(stale pid file: background server pid ${second.pid} died without a clean exit; log: `,
    ),
  );
  const restart = await runSvc(["jobs", "list"], { cwd: project, env, timeoutMs: 90_000 });
  assert.equal(restart.code, 0, restart.stderr);
  const third = await serverRecord(home);
  assert.equal(
    (await runSvc(["server", "stop"], { cwd: home, env })).stdout,
    "stopped the background server\n",
  );
  await assert.rejects(stat(join(home, ".svc", "server", "server.json")), { code: "ENOENT" });
  assert.match(
    await readFile(join(home, ".svc", "server", "server.log"), "utf8"),
    new RegExp(`pid ${second.pid} \\(started [^)]+\\) is gone without a clean exit`),
  );
  assert.notEqual(third.pid, second.pid);
});

test("kill -9 of the auto-started server during svc start on a terminal: the progress bar continues", {
  skip: !HAS_SCRIPT && needs("the script command", "no `script` (util-linux) on the PATH"),
}, async (t) => {
  const run = await killLocalServerDuringStart(true);
  assert.equal(run.r.code, 0, run.out);
  checkServerSide(run);
  const out = run.out;
  const afterNotice = out.slice(out.search(LOST_LOCAL));
  const bars = [...afterNotice.matchAll(/\[[#-]+\] +(\d+)\/60 +\d+%/g)].map((m) => Number(m[1]));
  assert.ok(bars.length > 0 && bars[0] >= 10, `the bar is redrawn after the notice: ${bars}`);
  assert.equal(bars.at(-1), 60);
  assert.match(afterNotice, /\[#+\] 60\/60 100%/);
  assert.doesNotMatch(out, /^step \d+\/60/m, "no plain step lines on a terminal");
  t.diagnostic(
    `terminal: notice ${run.detectMs} ms after the kill, server restarted after ${run.restartMs} ms`,
  );
});

test("a remote cloud API that stays down: svc start retries with a countdown, exits 1 in time with the resume hint; svc jobs follow resumes", async (t) => {
  const home = await tempDir("outage-remote-home");
  const modelArgs = ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`];
  let server: TestServer = await startTestServer({ home, args: modelArgs });
  cleanups.push(() => server.stop());
  const giveUpMs = 8000;
  const env = cliEnv(home, server.apiUrl, { SVC_API_GIVE_UP_MS: String(giveUpMs) });
  const project = await makeProject();
  const p = startProcess(process.execPath, [SVC_BIN, "start"], { cwd: project, env });
  cleanups.push(async () => p.child.kill("SIGKILL"));
  await p.waitFor(/checkpoint saved at step 10 /);
  const killedAt = Date.now();
  server.process.kill("SIGKILL");
  await p.waitFor(
    /lost the cloud API at http:\/\/127\.0\.0\.1:\d+ \(connection (refused|reset)\); retrying/,
    30_000,
  );
  const detectMs = Date.now() - killedAt;
  const r = await p.done;
  const elapsed = Date.now() - killedAt;
  assert.equal(r.code, 1, p.output());
  assert.match(r.stdout, /cloud API unreachable; retry 1 in \d+s \(giving up in \d+s\)/);
  const jobId = /job (\S+) submitted/.exec(r.stdout)![1];
  assert.equal(
    r.stderr,
    `svc start: gave up after 8s: the cloud API at ${server.apiUrl} does not answer (connection refused). Job ${jobId} was not cancelled; follow it again with: svc jobs follow ${jobId}\n`,
  );
  // Generous bound for a loaded machine: the give-up time plus one probe and one process exit.
  assert.ok(elapsed < giveUpMs + 10_000, `exited ${elapsed} ms after the kill`);
  t.diagnostic(
    `remote: notice ${detectMs} ms after the kill, exit 1 after ${elapsed} ms (give-up ${giveUpMs} ms)`,
  );

  // The API comes back (same port, same data): the hint's command follows the job to its end.
  server = await startTestServer({
    home,
    args: modelArgs,
    port: Number(new URL(server.apiUrl).port),
    dataDir: server.dataDir,
  });
  const follow = await runSvc(["jobs", "follow", jobId], { cwd: project, env, timeoutMs: 120_000 });
  assert.equal(follow.code, 0, follow.stderr);
  assert.match(follow.stdout, /completed: \d+ artifacts, 60 steps/);
});

test("a server that hangs (SIGSTOP): svc jobs follow notices the missing pings, and goes on when it continues", async (t) => {
  const home = await tempDir("outage-hang-home");
  const modelArgs = [
    "--bundled-models",
    "none",
    "--model",
    `${TEST_MODEL}=${model}`,
    "--sse-keepalive-ms",
    "500",
  ];
  const server = await startTestServer({ home, args: modelArgs });
  cleanups.push(async () => {
    server.process.kill("SIGCONT");
    await server.stop();
  });
  // Pings every 0.5 s; 3 s of silence is a dead stream.
  const env = cliEnv(home, server.apiUrl, { SVC_EVENT_IDLE_TIMEOUT_MS: "3000" });
  const project = await makeProject();
  const submitted = await runSvc(["start", "--detach"], { cwd: project, env });
  assert.equal(submitted.code, 0, submitted.stderr);
  const jobId = /job (\S+) submitted/.exec(submitted.stdout)![1];
  const p = startProcess(process.execPath, [SVC_BIN, "jobs", "follow", jobId], { cwd: project, env });
  cleanups.push(async () => p.child.kill("SIGKILL"));
  await p.waitFor(/checkpoint saved at step 10 /);
  server.process.kill("SIGSTOP");
  const stoppedAt = Date.now();
  await p.waitFor(
    /lost the cloud API at http:\/\/127\.0\.0\.1:\d+ \(no answer within 2s; no data for 3000 ms\); retrying/,
    30_000,
  );
  const detectMs = Date.now() - stoppedAt;
  assert.ok(detectMs >= 3000, `not before the idle time (${detectMs} ms)`);
  server.process.kill("SIGCONT");
  await p.waitFor(/the cloud API is back after \d+s; following the job from event \d+/, 60_000);
  const r = await p.done;
  assert.equal(r.code, 0, p.output());
  assert.match(r.stdout, /completed: \d+ artifacts, 60 steps/);
  t.diagnostic(`hang: notice ${detectMs} ms after SIGSTOP (idle time 3000 ms + a 2 s probe)`);
});

test("the SDK's wait() in a user's script: kill -9 of the local server is reported on stderr, and wait() settles completed", async (t) => {
  const { home, env } = await localHome();
  const project = await makeProject();
  const sdk = pathToFileURL(join(REPO_ROOT, "packages", "svc", "dist", "src", "index.js")).href;
  await writeFile(
    join(project, "train.mjs"),
    `import { createTrainer } from ${JSON.stringify(sdk)};
const rows = Array.from({ length: 16 }, (_, i) => ({ messages: [{ role: "user", content: ("question " + i + " ").repeat(12) }, { role: "assistant", content: ("answer " + i + " ").repeat(12) }] }));
const trainer = createTrainer({ name: "sdk-outage", model: "${TEST_MODEL}", dataset: { type: "inline", rows }, maxSteps: 60, saveSteps: 10, batchSize: 4 });
const { jobId } = await trainer.start();
console.log("job " + jobId);
const { job } = await trainer.wait({ onEvent: (e) => e.type === "checkpoint.saved" && console.log("checkpoint " + e.step) });
console.log("wait settled: " + job.status);
`,
  );
  const p = startProcess(process.execPath, ["train.mjs"], { cwd: project, env });
  cleanups.push(async () => p.child.kill("SIGKILL"));
  await p.waitFor(/^checkpoint 10$/m);
  const killed = await serverRecord(home);
  const killedAt = Date.now();
  process.kill(killed.pid, "SIGKILL");
  await p.waitFor(
    /^svc: lost the local server at \S+ \(connection (refused|reset)\); restarting it \(log: \S+\)$/m,
    30_000,
  );
  const detectMs = Date.now() - killedAt;
  const r = await p.done;
  assert.equal(r.code, 0, p.output());
  assert.match(
    r.stderr,
    new RegExp(
      `^svc: restarted the local server \\(pid \\d+\\); pid ${killed.pid} had died without a clean exit$`,
      "m",
    ),
  );
  assert.match(r.stderr, /^svc: the cloud API is back after \d+s; following the job from event \d+$/m);
  assert.match(r.stdout, /^wait settled: completed$/m);
  t.diagnostic(`wait(): notice ${detectMs} ms after the kill`);
});

test("a server that hangs (SIGSTOP): a one-shot command gives up after the response timeout with one line", async () => {
  const home = await tempDir("outage-hung-command-home");
  const server = await startTestServer({
    home,
    args: ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`],
  });
  cleanups.push(async () => {
    server.process.kill("SIGCONT");
    await server.stop();
  });
  const env = cliEnv(home, server.apiUrl, { SVC_API_RESPONSE_TIMEOUT_MS: "2000" });
  const project = await makeProject();
  const submitted = await runSvc(["start", "--detach"], { cwd: project, env });
  assert.equal(submitted.code, 0, submitted.stderr);
  server.process.kill("SIGSTOP");
  const started = Date.now();
  const r = await runSvc(["jobs", "list"], { cwd: project, env, timeoutMs: 60_000 });
  const elapsed = Date.now() - started;
  server.process.kill("SIGCONT");
  assert.notEqual(r.code, 0);
  assert.match(
    r.stderr,
    new RegExp(
      `the cloud API at ${server.apiUrl.replaceAll(".", "\\.")} did not answer GET /v1/jobs within 2s; it may be hung`,
    ),
  );
  assert.ok(elapsed < 30_000, `gave up after ${elapsed} ms`);
  // Once it continues, the same command answers.
  const again = await runSvc(["jobs", "list"], { cwd: project, env });
  assert.equal(again.code, 0, again.stderr);
});
