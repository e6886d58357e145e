// Pause and resume through `svc server` (SQLite and PostgreSQL): a running
// job paused mid-run checkpoints, stops and waits as "paused" (its worker
// claims other work, not it); resumed, it goes on from that checkpoint and
// trains exactly the steps it had left. A queued job pauses at once; a paused
// job can be cancelled; finished jobs and jobs that are not paused answer 409
// (docs/api.md#pause-and-resume). The OpenAI client's pause/resume: openai-pause.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  call,
  chatJsonl,
  createJob,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  serverFor,
  until,
  uploadDataset,
} from "./harness.js";

const STEPS = 300;

for (const backend of ["sqlite", "postgres"] as const)
  describe(`pause and resume (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let dataset: { id: string };
    const action = (jobId: string, what: string) =>
      call(server.apiUrl, "POST", `/v1/jobs/${jobId}/${what}`, { token: id.token, json: {} });
    const status = async (jobId: string) =>
      (await call(server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: id.token })).body.job.status as string;

    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--workers", "1"]);
      id = await newIdentity(server.apiUrl);
      dataset = await uploadDataset(server.apiUrl, id, chatJsonl(8));
    });
    after(async () => server?.cleanup());

    it("a running job pauses at a checkpoint, stays paused, and resumed trains the steps it had left", async () => {
      const job = await createJob(server.apiUrl, id, dataset.id, { maxSteps: STEPS, saveSteps: 1000 });
      // Training has begun once the first step is logged.
      await readSse(await openEvents(server.apiUrl, id.token, job.id), {
        stopWhen: (f) => f.event === "training.log",
        timeoutMs: 60_000,
      });
      // The only worker is busy: a second job waits queued, and pauses at once.
      const queued = await createJob(server.apiUrl, id, dataset.id, { maxSteps: 2 });
      const pausedQueued = await action(queued.id, "pause");
      assert.equal(pausedQueued.status, 200, JSON.stringify(pausedQueued.body));
      assert.equal(pausedQueued.body.job.status, "paused");

      const paused = await action(job.id, "pause");
      assert.equal(paused.status, 200, JSON.stringify(paused.body));
      assert.ok(["running", "paused"].includes(paused.body.job.status), paused.body.job.status);
      await until("the job to be paused", async () => (await status(job.id)) === "paused", 60_000);
      // Not claimed while paused, though the worker is free now: neither job.
      await new Promise((r) => setTimeout(r, 800));
      assert.equal(await status(job.id), "paused");
      assert.equal(await status(queued.id), "paused");
      const again = await action(job.id, "pause");
      assert.equal(again.body.job.status, "paused", "pausing a paused job changes nothing");

      const resumed = await action(job.id, "resume");
      assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
      // Queued again; the free worker may have claimed it before the answer was read back.
      assert.ok(["queued", "running"].includes(resumed.body.job.status), resumed.body.job.status);
      const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 120_000);
      const all = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      const pauses = all.filter((e) => e.type === "training.paused");
      assert.equal(pauses.length, 1);
      assert.equal(all.filter((e) => e.type === "training.resumed").length, 1);
      const saved = all.filter((e) => e.type === "checkpoint.saved").map((e) => e.step);
      for (const p of pauses) assert.ok(saved.includes(p.step), `a checkpoint at the paused step ${p.step}`);
      const starts = all.filter((e) => e.type === "training.started");
      assert.equal(starts.length, 2);
      assert.ok(pauses[0].step >= 1 && pauses[0].step < STEPS, `paused at step ${pauses[0].step}`);
      assert.equal(starts[1].resumedFromStep, pauses[0].step);
      const logs = all.filter((e) => e.type === "training.log");
      assert.deepEqual(
        [...new Set(logs.map((l) => l.step))].sort((a, b) => a - b),
        Array.from({ length: STEPS }, (_, i) => i + 1),
        "every step once (a resume logs from its checkpoint on)",
      );
      assert.equal(all.at(-2).type, "training.completed");
      assert.equal(all.at(-2).metrics.steps, STEPS);
      console.log(`# ${backend}: paused at step ${pauses[0].step} of ${STEPS}`);

      const notPaused = await action(job.id, "resume");
      assert.equal(notPaused.status, 409);
      assert.equal(notPaused.body.error.code, "job_not_paused");
      const finished = await action(job.id, "pause");
      assert.equal(finished.status, 409);
      assert.equal(finished.body.error.code, "job_finished");
      // A paused job can be cancelled.
      const cancelled = await call(server.apiUrl, "POST", `/v1/jobs/${queued.id}/cancel`, {
        token: id.token,
        json: {},
      });
      assert.equal(cancelled.body.job.status, "cancelled");
      const missing = await action("0192f2a4-7b1c-7d3e-8f00-0123456789ab", "pause");
      assert.equal(missing.status, 404);
    });
  });
