// The local server svc started is killed with SIGKILL before the job saved
// its first checkpoint (issue 39): the CLI restarts the server, the server
// starts the job again from step 0 as attempt 2, `svc start` prints that and
// follows it to the end, and exits 0; `svc jobs show` names the attempt and why
// the first one ended. Every process is real; the server is on SQLite.
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  cliEnv,
  createTestModel,
  freePort,
  runSvc,
  SVC_BIN,
  startProcess,
  TEST_MODEL,
  tempDir,
} from "./harness.js";

let model: string;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  // Big enough that 60 steps take seconds, so the kill lands mid-run.
  model = await createTestModel({ hiddenSize: 128, intermediateSize: 256, numHiddenLayers: 4 });
});

after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function serverPid(home: string): Promise<number> {
  return JSON.parse(await readFile(join(home, ".svc", "server", "server.json"), "utf8")).pid;
}

test("kill -9 of the auto-started server before the first checkpoint: the job starts again from step 0 as attempt 2, svc start exits 0", async (t) => {
  const home = await tempDir("crash-restart-home");
  const env = cliEnv(home, null, {
    SVC_LOCAL_API_PORT: String(await freePort()),
    SVC_LOCAL_EDGE_PORT: String(await freePort()),
    SVC_MODELS: `${TEST_MODEL}=${model}`,
  });
  cleanups.push(async () => {
    const pid = await serverPid(home).catch(() => null);
    await runSvc(["server", "stop"], { cwd: home, env });
    if (pid) process.kill(pid, "SIGKILL");
  });
  const project = await tempDir("crash-restart-project");
  await mkdir(join(project, "src", "svc"), { recursive: true });
  // No checkpoint before the end (saveSteps past maxSteps): a crash leaves nothing to resume from.
  await writeFile(
    join(project, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 16 }, (_, i) => ({ messages: [{ role: "user", content: ("question " + i + " ").repeat(12) }, { role: "assistant", content: ("answer " + i + " ").repeat(12) }] }));
export default createSvc({ trainer: createTrainer({ name: "crash", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, maxSteps: 60, saveSteps: 1000, batchSize: 4 }) });
`,
  );
  const p = startProcess(process.execPath, [SVC_BIN, "start"], { cwd: project, env });
  cleanups.push(async () => p.child.kill("SIGKILL"));
  await p.waitFor(/^step 5\/60/m);
  const killed = await serverPid(home);
  const killedAt = Date.now();
  process.kill(killed, "SIGKILL");
  await p.waitFor(/restarted the local server \(pid \d+\)/, 90_000);
  const r = await p.done;
  const out = p.output();
  assert.equal(r.code, 0, out);
  assert.doesNotMatch(out, /training failed/);
  const restart = out.search(/^attempt 2 started from step 0; attempt 1 ended: /m);
  assert.ok(restart > 0, out);
  assert.match(
    out.slice(restart),
    /^attempt 2 started from step 0; attempt 1 ended: the process running this job \(worker-\d+-\w+\) stopped unexpectedly at step \d+ before it saved a checkpoint\nstarted: 60 steps/m,
  );
  const stepsAfter = [...out.slice(restart).matchAll(/^step (\d+)\/60/gm)].map((m) => Number(m[1]));
  assert.deepEqual(
    stepsAfter,
    Array.from({ length: 60 }, (_, i) => i + 1),
    "attempt 2 trains every step from the first",
  );
  assert.match(out, /completed: \d+ artifacts?, 60 steps/);
  assert.match(out, /done: job \S+ \(adapter: final\)/);
  t.diagnostic(`the job completed ${Date.now() - killedAt} ms after the kill`);

  const jobId = /job (\S+) submitted/.exec(out)![1];
  const shown = await runSvc(["jobs", "show", jobId], { cwd: project, env });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^status {6}completed$/m);
  assert.match(
    shown.stdout,
    /^attempt {5}2 \(restarted after: the process running this job \(worker-\d+-\w+\) stopped unexpectedly at step \d+ before it saved a checkpoint\)$/m,
  );
  const json = JSON.parse((await runSvc(["jobs", "show", jobId, "--json"], { cwd: project, env })).stdout);
  assert.equal(json.job.attempt, 2);
  const log = await readFile(join(home, ".svc", "server", "server.log"), "utf8");
  assert.match(
    log,
    new RegExp(`job ${jobId} lost its worker; re-queued to start again from step 0 \\(attempt 2\\)`),
  );
});
