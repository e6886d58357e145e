// Faults: kill -9 of the server during a job, then a restart on the same data
// (the job resumes from its last checkpoint, or starts again from step 0 as
// its next attempt when it had none, or fails with its attempts and the cause
// when restarts are off; nothing created disappears), and SIGTERM (the job
// checkpoints, goes back to the queue and resumes). On SQLite and on PostgreSQL.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, describe, it } from "node:test";
import {
  assertEdgeAnswers,
  type Backend,
  call,
  createJob,
  createPgDatabase,
  deploymentWithKey,
  eventsUntilEnd,
  newIdentity,
  openEvents,
  readSse,
  type SseFrame,
  startServerProcess,
  tempDir,
  uploadDataset,
} from "./harness.js";

// kill -9 tests need a lease that expires quickly; a graceful stop needs none, and a
// short lease there lets a heartbeat delayed by a loaded machine restart the job.
const FAST_LEASE = ["--job-lease-ms", "600", "--job-poll-ms", "100"];
const FAST_POLL = ["--job-poll-ms", "100"];

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`faults (${backend})`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    /** Two server lifetimes over the same data dir and database. */
    async function storage(args = FAST_LEASE) {
      const dataDir = tempDir("faults");
      const database = backend === "postgres" ? await createPgDatabase() : null;
      cleanups.push(async () => {
        await database?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      });
      const start = async () => {
        const server = await startServerProcess({ dataDir, databaseUrl: database?.url, args });
        cleanups.push(async () => void (await server.stop()));
        return server;
      };
      return { start };
    }

    const waitFor = async (apiUrl: string, token: string, jobId: string, stop: (f: SseFrame) => boolean) =>
      (await readSse(await openEvents(apiUrl, token, jobId), { stopWhen: stop })).frames;

    it("resumes a job from its last checkpoint after kill -9 and keeps deployments and keys", async () => {
      const { start } = await storage();
      const first = await start();
      const id = await newIdentity(first.apiUrl);
      const dataset = await uploadDataset(first.apiUrl, id);
      const { deployment, key } = await deploymentWithKey(
        first.apiUrl,
        id,
        `survivor-${backend}-${process.pid}`,
      );
      const job = await createJob(first.apiUrl, id, dataset.id, { maxSteps: 300, saveSteps: 5 });
      const before = await waitFor(first.apiUrl, id.token, job.id, (f) => f.event === "checkpoint.saved");
      await first.kill9();

      const second = await start();
      const frames = await eventsUntilEnd(second.apiUrl, id.token, job.id, 120_000);
      assert.equal(frames.at(-1)?.event, "end");
      assert.equal(frames.at(-2)?.event, "training.completed", frames.map((f) => f.event).join(","));
      assert.ok(frames.length > before.length);
      const starts = frames.flatMap((f, i) => (f.event === "training.started" ? [i] : []));
      assert.equal(starts.length, 2, "started once per run");
      const beforeRestart = frames.slice(0, starts[1]);
      const lastCheckpoint = beforeRestart
        .filter((f) => f.event === "checkpoint.saved")
        .map((f) => JSON.parse(f.data).step)
        .at(-1);
      const firstLogAfter = frames.slice(starts[1]).find((f) => f.event === "training.log");
      assert.equal(
        JSON.parse(firstLogAfter!.data).step,
        lastCheckpoint + 1,
        "resumed right after the checkpoint",
      );
      assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, 300);

      const got = await call(second.apiUrl, "GET", `/v1/endpoints/${deployment.id}`, { token: id.token });
      assert.equal(got.status, 200);
      const keys = await call(second.apiUrl, "GET", `/v1/endpoints/${deployment.id}/keys`, {
        token: id.token,
      });
      assert.deepEqual(
        keys.body.keys.map((k: { id: string }) => k.id),
        [key.id],
      );
      await assertEdgeAnswers(second.edgeUrl, deployment.slug, key.plaintext);
      const datasets = await call(second.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token });
      assert.equal(datasets.body.datasets.length, 1);
    });

    it("restarts a job that had no checkpoint when its server was killed from step 0, as attempt 2", async () => {
      const { start } = await storage();
      const first = await start();
      const id = await newIdentity(first.apiUrl);
      const job = await createJob(first.apiUrl, id, (await uploadDataset(first.apiUrl, id)).id, {
        maxSteps: 40,
        saveSteps: 100000,
      });
      await waitFor(first.apiUrl, id.token, job.id, (f) => f.event === "training.log");
      await first.kill9();
      const second = await start();
      const frames = await eventsUntilEnd(second.apiUrl, id.token, job.id, 120_000);
      const events = frames.map((f) => f.event);
      assert.equal(events.at(-2), "training.completed", events.join(","));
      const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
      assert.equal(starts.length, 2, "one start per attempt");
      assert.equal(starts[0].attempt, 1);
      assert.equal(starts[1].attempt, 2);
      assert.equal(starts[1].resumedFromStep, 0, "the second attempt supersedes the first one's steps");
      assert.match(starts[1].restartedAfter, /stopped unexpectedly at step \d+ before it saved a checkpoint/);
      // History replayed afterwards counts each step once: the first attempt's frames are superseded.
      const replay = await eventsUntilEnd(second.apiUrl, id.token, job.id);
      const steps = replay.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data).step);
      assert.deepEqual(
        steps,
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
      const got = await call(second.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token });
      assert.equal(got.body.job.status, "completed");
      assert.equal(got.body.job.attempt, 2);
      assert.match(got.body.job.restartedAfter, /stopped unexpectedly/);
      assert.match(second.output(), /re-queued to start again from step 0 \(attempt 2\)/);
    });

    it("fails a job whose server was killed when crash restarts are off, with the attempts and the cause", async () => {
      const { start } = await storage([...FAST_LEASE, "--job-crash-restarts", "0"]);
      const first = await start();
      const id = await newIdentity(first.apiUrl);
      const job = await createJob(first.apiUrl, id, (await uploadDataset(first.apiUrl, id)).id, {
        maxSteps: 100000,
        saveSteps: 100000,
      });
      await waitFor(first.apiUrl, id.token, job.id, (f) => f.event === "training.log");
      await first.kill9();
      const second = await start();
      const frames = await eventsUntilEnd(second.apiUrl, id.token, job.id);
      assert.equal(frames.at(-2)?.event, "training.failed");
      const error = JSON.parse(frames.at(-2)!.data).error;
      assert.match(error, /stopped unexpectedly at step \d+ before it saved a checkpoint/);
      assert.match(
        error,
        /restarts after a crash are off \(--job-crash-restarts 0\); failed after 1 attempt$/,
      );
      const got = await call(second.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token });
      assert.equal(got.body.job.status, "failed");
      assert.equal(got.body.job.attempt, 1);
      assert.equal(got.body.job.error, error);
    });

    it("on SIGTERM checkpoints the running job, exits 0, and resumes it on the next start", async () => {
      const { start } = await storage(FAST_POLL);
      const first = await start();
      const id = await newIdentity(first.apiUrl);
      const job = await createJob(first.apiUrl, id, (await uploadDataset(first.apiUrl, id)).id, {
        maxSteps: 400,
        saveSteps: 100000,
      });
      await waitFor(
        first.apiUrl,
        id.token,
        job.id,
        (f) => f.event === "training.log" && JSON.parse(f.data).step >= 3,
      );
      assert.equal(await first.stop(), 0);
      assert.match(first.output(), /svc server: stopped/);

      const second = await start();
      const frames = await eventsUntilEnd(second.apiUrl, id.token, job.id, 120_000);
      const events = frames.map((f) => f.event);
      assert.equal(events.at(-2), "training.completed", events.join(","));
      const starts = events.flatMap((e, i) => (e === "training.started" ? [i] : []));
      assert.equal(starts.length, 2);
      const checkpoint = frames.slice(0, starts[1]).find((f) => f.event === "checkpoint.saved");
      assert.ok(checkpoint, "the interrupted run saved a checkpoint");
      const step = JSON.parse(checkpoint.data).step;
      assert.ok(step >= 3);
      const firstLogAfter = frames.slice(starts[1]).find((f) => f.event === "training.log");
      assert.equal(JSON.parse(firstLogAfter!.data).step, step + 1);
    });
  });
}
