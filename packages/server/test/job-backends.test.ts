// Which runner takes which job: a runner claims its own backend's jobs and
// "auto" ones, except that a runner without a GPU leaves "auto" jobs to a GPU
// runner with a free slot; a job no live runner can take says why it waits.
// The GPU runner here is a row in the workers table, as a `svc worker
// --backend torch --device cuda` on another machine would record itself.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, it } from "node:test";
import pg from "pg";
import {
  call,
  createJob,
  createPgDatabase,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  startServerProcess,
  tempDir,
  uploadDataset,
} from "./harness.js";

let database: Awaited<ReturnType<typeof createPgDatabase>>;
let dataDir: string;
let server: ServerProcess;
let id: Identity;
let db: pg.Client;

before(async () => {
  database = await createPgDatabase();
  dataDir = tempDir("backends");
  server = await startServerProcess({ dataDir, databaseUrl: database.url, args: ["--job-poll-ms", "100"] });
  id = await newIdentity(server.apiUrl);
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
});
after(async () => {
  await db?.end();
  await server?.stop();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const job = async (jobId: string) =>
  (await call(server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: id.token })).body.job;
const gpuWorker = (freeSlots: number) =>
  db.query(
    `insert into workers (owner, backend, device, free_slots, seen_at) values ('worker-gpu', 'torch', 'cuda', $1, $2)
     on conflict (owner) do update set free_slots = $1, seen_at = $2`,
    [freeSlots, new Date().toISOString()],
  );

it("leaves an auto job to a free GPU worker, and takes it when no GPU worker is free", async () => {
  await gpuWorker(1);
  const dataset = await uploadDataset(server.apiUrl, id);
  const auto = await createJob(server.apiUrl, id, dataset.id, { maxSteps: 2 });
  const engine = await createJob(server.apiUrl, id, dataset.id, { maxSteps: 2 }, { backend: "engine" });
  assert.equal(auto.status, "queued");
  // The engine job runs at once; the auto job waits for the GPU (the server's runner polls every 100 ms).
  assert.equal(
    (await eventsUntilEnd(server.apiUrl, id.token, engine.id)).at(-2)?.event,
    "training.completed",
  );
  await new Promise((r) => setTimeout(r, 1000));
  const waiting = await job(auto.id);
  assert.equal(waiting.status, "queued");
  assert.equal(waiting.backend, "auto");
  assert.equal(waiting.queuedReason, null, "a worker that can run it is there");

  await gpuWorker(0); // the GPU worker is busy: the engine takes the job
  const frames = await eventsUntilEnd(server.apiUrl, id.token, auto.id);
  assert.equal(frames.at(-2)?.event, "training.completed");
  assert.equal((await job(auto.id)).status, "completed");
});

it("says why a job waits when no runner offers its backend, and refuses an unknown backend", async () => {
  await db.query("delete from workers where owner = 'worker-gpu'");
  const dataset = await uploadDataset(server.apiUrl, id);
  const torch = await createJob(server.apiUrl, id, dataset.id, { maxSteps: 2 }, { backend: "torch" });
  assert.match((await job(torch.id)).queuedReason, /no worker offers the torch backend/);
  const listed = (await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token })).body.jobs;
  assert.match(
    listed.find((j: { id: string }) => j.id === torch.id).queuedReason,
    /svc worker --backend torch/,
  );
  await call(server.apiUrl, "POST", `/v1/jobs/${torch.id}/cancel`, { token: id.token });

  const bad = await call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
    token: id.token,
    json: { name: "x", baseModel: "test/tiny", datasetId: dataset.id, backend: "tpu" },
  });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /"backend"/);
});
