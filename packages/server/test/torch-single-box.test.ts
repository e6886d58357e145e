// The torch backend on one box with the default server (issue 39): `svc
// server` on its embedded SQLite file, with its own engine runner, and `svc
// worker --backend torch` on the same --data-dir without --database-url. The
// worker trains torch jobs while the server's engine runner trains engine
// jobs and leaves the torch ones alone; events the worker writes reach the
// server's live streams; the lease rules hold across the processes: a server
// restart leaves the worker's running job alone, and a torch worker killed
// with SIGKILL has its job resumed by the next one (or restarted from step 0
// as attempt 2 when it had no checkpoint yet).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { needs } from "@svc/engine/testing";
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
  spawnReady,
  startServerProcess,
  TINY_MODEL,
  tempDir,
  tinyModel,
  uploadDataset,
  waitForExit,
} from "./harness.js";
import { completedTorchLogs, framesText, hasTorch, TORCH_PYTHON, trainingLogs } from "./torch-harness.js";

type Worker = Awaited<ReturnType<typeof spawnReady>>;
const SERVER_TIMING = ["--job-poll-ms", "100", "--job-lease-ms", "3000"];
// A lease far longer than the tests wait: a job recovered in time was recovered by seeing its worker's process gone.
const WORKER_TIMING = ["--job-poll-ms", "100", "--job-lease-ms", "120000"];

describe("svc worker --backend torch next to the default SQLite server on one box", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, () => {
  let dataDir: string;
  let server: ServerProcess;
  let id: Identity;
  const workers: Worker[] = [];

  const startServer = () => startServerProcess({ dataDir, args: [...SERVER_TIMING, "--workers", "1"] });
  /** The one command of docs/gpu-training.md, with the test's model and timings. */
  const startWorker = async () => {
    const worker = await spawnReady("worker", [
      ...["--backend", "torch", "--python", TORCH_PYTHON, "--data-dir", dataDir],
      ...["--bundled-models", "none", "--model", `${TINY_MODEL}=${await tinyModel()}`],
      ...WORKER_TIMING,
    ]);
    workers.push(worker);
    return worker;
  };
  const alive = () => workers.filter((w) => w.proc.exitCode === null && w.proc.signalCode === null);
  /** The running worker, started when none runs (each test can run on its own). */
  const aWorker = async () => alive()[0] ?? (await startWorker());
  const kill9 = async (worker: Worker) => {
    worker.proc.kill("SIGKILL");
    await waitForExit(worker.proc);
  };
  const job = async (jobId: string) =>
    (await call(server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: id.token })).body.job;
  const newJob = async (backend: string, hyperparameters: Record<string, unknown>) => {
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    return createJob(server.apiUrl, id, dataset.id, hyperparameters, { backend });
  };
  const waitForEvent = async (jobId: string, event: string) =>
    readSse(await openEvents(server.apiUrl, id.token, jobId), {
      stopWhen: (f) => f.event === event,
      timeoutMs: 60_000,
    });

  before(async () => {
    dataDir = tempDir("torch-one-box");
    server = await startServer();
    id = await newIdentity(server.apiUrl);
  });
  after(async () => {
    for (const w of alive()) await kill9(w);
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("trains a torch job on the worker and an engine job in the server at the same time", async () => {
    const worker = await startWorker();
    assert.match(
      worker.output(),
      new RegExp(`claiming torch \\(cpu\\) jobs from ${join(dataDir, "svc.db")}`),
    );
    const torchJob = await newJob("torch", { maxSteps: 6, saveSteps: 3 });
    const engineJob = await newJob("engine", { maxSteps: 6, saveSteps: 3 });
    const [torchFrames, engineFrames] = await Promise.all([
      eventsUntilEnd(server.apiUrl, id.token, torchJob.id, 120_000),
      eventsUntilEnd(server.apiUrl, id.token, engineJob.id, 120_000),
    ]);
    completedTorchLogs(torchFrames, 6);
    assert.equal(engineFrames.at(-2)?.event, "training.completed", framesText(engineFrames));
    for (const log of trainingLogs(engineFrames)) assert.notEqual(log.backend, "torch");
    assert.match(worker.output(), new RegExp(`runs job ${torchJob.id}`));
    assert.doesNotMatch(worker.output(), new RegExp(`runs job ${engineJob.id}`));
    assert.doesNotMatch(server.output(), new RegExp(`runs job ${torchJob.id}`));
    assert.equal((await job(torchJob.id)).status, "completed");
    // The worker's final adapter is in the shared data dir, listed by the server.
    const artifacts = (
      await call(server.apiUrl, "GET", `/v1/jobs/${torchJob.id}/artifacts`, { token: id.token })
    ).body.artifacts as { kind: string }[];
    assert.ok(
      artifacts.some((a) => a.kind === "final"),
      JSON.stringify(artifacts),
    );
  });

  it("a server restart leaves the job the worker runs alone: its lease is honoured, the job completes once", async () => {
    await aWorker();
    const created = await newJob("torch", { maxSteps: 600, saveSteps: 100000 });
    await waitForEvent(created.id, "training.log");
    assert.equal(await server.stop(), 0);
    server = await startServer();
    assert.equal((await job(created.id)).status, "running", "still training when the new server is up");
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 240_000);
    const starts = frames.filter((f) => f.event === "training.started");
    assert.equal(starts.length, 1, "trained in one run, not re-queued by the new server");
    completedTorchLogs(frames, 600);
    assert.equal((await job(created.id)).attempt, 1);
    assert.doesNotMatch(server.output(), /lost its worker/);
  });

  it("a torch worker killed with SIGKILL before the first checkpoint: the next one starts the job again from step 0 as attempt 2", async () => {
    await aWorker();
    const created = await newJob("torch", { maxSteps: 200, saveSteps: 100000 });
    await waitForEvent(created.id, "training.log");
    for (const w of alive()) await kill9(w);
    // The server sees that the worker's process is gone (same machine) without waiting for its lease.
    const killedAt = Date.now();
    for (;;) {
      const now = await job(created.id);
      if (now.status === "queued") break;
      assert.equal(now.status, "running");
      assert.ok(Date.now() - killedAt < 20_000, "re-queued long before the 120 s lease lapses");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.match(server.output(), /re-queued to start again from step 0 \(attempt 2\)/);
    await startWorker();
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 240_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames).slice(-2000));
    const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
    assert.deepEqual(
      starts.map((s) => [s.attempt, s.resumedFromStep]),
      [
        [1, undefined],
        [2, 0],
      ],
    );
    const done = await job(created.id);
    assert.equal(done.attempt, 2);
    assert.match(done.restartedAfter, /stopped unexpectedly at step \d+ before it saved a checkpoint/);
    // Replayed history counts each step once.
    completedTorchLogs(await eventsUntilEnd(server.apiUrl, id.token, created.id), 200);
  });
});
