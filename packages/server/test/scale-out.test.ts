// Scale-out on PostgreSQL: an API process with no in-process worker and a
// separate `svc worker` process sharing the database and data dir. The worker
// claims the job; the API process delivers its events live (LISTEN/NOTIFY).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import pg from "pg";
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
  until,
  uploadDataset,
  waitForExit,
} from "./harness.js";

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A fresh PostgreSQL database and data dir that the processes of one test share; removed after the file. */
async function sharedStorage(prefix: string) {
  const database = await createPgDatabase();
  const dataDir = tempDir(prefix);
  cleanups.push(async () => {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { database, dataDir };
}

/** `svc worker` flags over that storage, serving the tiny model and polling fast. */
const workerFlags = async (databaseUrl: string, dataDir: string) => [
  "--database-url",
  databaseUrl,
  "--data-dir",
  dataDir,
  "--bundled-models",
  "none",
  "--model",
  `${TINY_MODEL}=${await tinyModel()}`,
  "--job-poll-ms",
  "100",
];

it("runs jobs on `svc worker` processes and streams their events through the API process", async () => {
  const { database, dataDir } = await sharedStorage("scale");
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

  const workerArgs = await workerFlags(database.url, dataDir);
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

it("`svc worker` without --database-url works on the SQLite file of --data-dir, and refuses a data dir no server made (exit 2)", async () => {
  const dataDir = tempDir("w");
  await assert.rejects(
    spawnReady("worker", ["--data-dir", dataDir, "--bundled-models", "none"]),
    new RegExp(
      `exited with 2 before it was ready:\\nsvc: no svc server database in ${dataDir} \\(${join(dataDir, "svc.db")} does not exist\\): start \`svc server\` with this --data-dir first, or give --database-url postgres://`,
    ),
  );
  // A server made the database (a server on one box; torch-single-box.test.ts).
  const server = await startServerProcess({ dataDir, args: ["--workers", "0"] });
  await server.stop();
  const worker = await spawnReady("worker", ["--data-dir", dataDir, "--bundled-models", "none"]);
  assert.match(worker.output(), new RegExp(`claiming engine jobs from ${join(dataDir, "svc.db")}\n`));
  worker.proc.kill("SIGTERM");
  const code = await waitForExit(worker.proc);
  assert.equal(code, 0, `signal ${worker.proc.signalCode}; its output:\n${worker.output()}`);
  rmSync(dataDir, { recursive: true, force: true });
});

it("applies a deployment change made through one API process to the next request at another one's edge", async () => {
  const { database, dataDir } = await sharedStorage("two-api");
  const [a, b] = await Promise.all([
    // A cache that would outlive the test: only the change notification can refresh it.
    startServerProcess({ dataDir, databaseUrl: database.url, args: ["--edge-cache-ms", "600000"] }),
    startServerProcess({
      dataDir,
      databaseUrl: database.url,
      args: ["--workers", "0", "--edge-cache-ms", "600000"],
    }),
  ]);
  cleanups.push(
    async () => void (await a.stop()),
    async () => void (await b.stop()),
  );
  const id = await newIdentity(a.apiUrl);
  const created = await call(a.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
    token: id.token,
    json: { slug: `shared-${process.pid}`, target: { kind: "base_model", baseModel: TINY_MODEL } },
  });
  const deployment = created.body.deployment;
  const key = (
    await call(a.apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
      token: id.token,
      json: { label: "k" },
    })
  ).body.key;
  const ask = () =>
    fetch(`${b.edgeUrl}/d/${deployment.slug}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.plaintext}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 1 }),
    }).then((r) => r.status);
  assert.equal(await ask(), 200);
  await call(a.apiUrl, "PATCH", `/v1/endpoints/${deployment.id}`, {
    token: id.token,
    json: { enabled: false },
  });
  // Only NOTIFY from the other process can clear this edge's cache.
  await until("the other edge to see the change", async () => (await ask()) === 404, 5000);
  await call(a.apiUrl, "PATCH", `/v1/endpoints/${deployment.id}`, {
    token: id.token,
    json: { enabled: true },
  });
  await until("re-enabled", async () => (await ask()) === 200, 5000);

  // Cut every LISTEN connection: the processes reconnect and keep hearing changes.
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  const cut = await admin.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
  );
  await admin.end();
  assert.equal(cut.rowCount, 2);
  await until(
    "both processes to LISTEN again",
    async () => {
      const check = new pg.Client({ connectionString: database.url });
      await check.connect();
      const r = await check.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
      );
      await check.end();
      return r.rows[0].n === 2;
    },
    10_000,
  );
  await call(a.apiUrl, "DELETE", `/v1/endpoints/${deployment.id}/keys/${key.id}`, { token: id.token });
  await until("revocation at the other edge", async () => (await ask()) === 401, 5000);
});

it("a job whose `svc worker` is killed (kill -9) is resumed by another worker within the lease plus half a lease, and leaves no training process behind", async (t) => {
  const { database, dataDir } = await sharedStorage("scale-dead");
  // Default lease (10 s) everywhere: the detection time under test is the shipped one.
  const server = await startServerProcess({ dataDir, databaseUrl: database.url, args: ["--workers", "0"] });
  cleanups.push(async () => void (await server.stop()));
  const id = await newIdentity(server.apiUrl);
  const job = await createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, {
    maxSteps: 100_000,
    saveSteps: 5,
  });
  const workerArgs = await workerFlags(database.url, dataDir);
  const first = await spawnReady("worker", workerArgs);
  cleanups.push(async () => {
    first.proc.kill("SIGKILL");
    await waitForExit(first.proc);
  });
  const stream = await openEvents(server.apiUrl, id.token, job.id);
  await readSse(stream, { stopWhen: (f) => f.event === "checkpoint.saved" });
  const trainingPid = Number(/runs job \S+ in process (\d+)/.exec(first.output())?.[1]);
  const second = await spawnReady("worker", workerArgs);
  cleanups.push(async () => {
    second.proc.kill("SIGTERM");
    await waitForExit(second.proc);
  });

  first.proc.kill("SIGKILL");
  const killedAt = Date.now();
  await until(
    "the second worker to take the job",
    async () => second.output().includes(`runs job ${job.id}`),
    40_000,
  );
  const resumedMs = Date.now() - killedAt;
  assert.ok(resumedMs < 10_000 + 5_000 + 10_000, `resumed ${resumedMs} ms after the kill`);
  t.diagnostic(`resumed by the second worker ${resumedMs} ms after kill -9 of the first`);
  assert.match(second.output(), new RegExp(`runs job ${job.id} in process \\d+ from .*checkpoint-\\d+`));
  // The dead worker's training process ended with it (its IPC channel closed).
  await until("the orphaned training process to exit", async () => {
    try {
      process.kill(trainingPid, 0);
      return false;
    } catch {
      return true;
    }
  });
  const cancel = await call(server.apiUrl, "POST", `/v1/jobs/${job.id}/cancel`, { token: id.token });
  assert.equal(cancel.status, 200);
  const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 60_000);
  assert.equal(frames.at(-2)?.event, "training.cancelled");
});
