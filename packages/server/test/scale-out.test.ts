// Scale-out on PostgreSQL: an API process with no in-process worker and a
// separate `svc worker` process sharing the database and data dir. The worker
// claims the job; the API process delivers its events live (LISTEN/NOTIFY).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, it } from "node:test";
import {
  call,
  createJob,
  createPgDatabase,
  eventsUntilEnd,
  newIdentity,
  openEvents,
  readSse,
  spawnReady,
  startServerProcess,
  TINY_MODEL,
  tempDir,
  tinyModel,
  uploadDataset,
  waitForExit,
} from "./harness.js";

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

it("runs jobs on `svc worker` processes and streams their events through the API process", async () => {
  const database = await createPgDatabase();
  const dataDir = tempDir("scale");
  cleanups.push(async () => {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const server = await startServerProcess({ dataDir, databaseUrl: database.url, args: ["--workers", "0"] });
  cleanups.push(async () => void (await server.stop()));
  const id = await newIdentity(server.apiUrl);
  const job = await createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, {
    maxSteps: 6,
    saveSteps: 3,
  });

  // Subscribed before any worker exists: every event must arrive live.
  const live = readSse(await openEvents(server.apiUrl, id.token, job.id), { timeoutMs: 60_000 });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(
    (await call(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token })).body.job.status,
    "queued",
  );

  const workerArgs = [
    "--database-url",
    database.url,
    "--data-dir",
    dataDir,
    "--bundled-models",
    "none",
    "--model",
    `${TINY_MODEL}=${await tinyModel()}`,
    "--job-poll-ms",
    "100",
  ];
  const workers = await Promise.all([spawnReady("worker", workerArgs), spawnReady("worker", workerArgs)]);
  cleanups.push(async () => {
    for (const w of workers) {
      w.proc.kill("SIGTERM");
      await waitForExit(w.proc);
    }
  });
  const read = await live;
  const events = read.frames.map((f) => f.event);
  assert.equal(events[0], "training.started");
  assert.equal(events.at(-2), "training.completed");
  assert.equal(events.at(-1), "end");
  assert.equal(events.filter((e) => e === "training.log").length, 6);
  assert.deepEqual(await eventsUntilEnd(server.apiUrl, id.token, job.id), read.frames);

  // Several jobs spread over the two workers, each claimed exactly once.
  const more = await Promise.all(
    [1, 2, 3, 4].map(async () =>
      createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, { maxSteps: 3 }),
    ),
  );
  for (const j of more) {
    const frames = await eventsUntilEnd(server.apiUrl, id.token, j.id);
    assert.equal(frames.filter((f) => f.event === "training.started").length, 1);
    assert.equal(frames.at(-2)?.event, "training.completed");
  }
  for (const j of [job, ...more]) {
    const runners = workers.filter((w) => w.output().includes(`runs job ${j.id}`));
    assert.equal(runners.length, 1, `job ${j.id} ran on exactly one worker`);
  }

  for (const w of workers) {
    w.proc.kill("SIGTERM");
    assert.equal(await waitForExit(w.proc), 0);
  }
});

it("refuses `svc worker` without a PostgreSQL URL (exit 2, one clear line)", async () => {
  await assert.rejects(spawnReady("worker", ["--data-dir", tempDir("w")]), /svc worker needs --database-url/);
});
