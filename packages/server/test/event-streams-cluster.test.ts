// Event streams on two API processes over one PostgreSQL (issue 42's "many
// API processes"): `svc server` A and B, neither running jobs, and a `svc
// worker` that trains a job of the tiny model. The worker's events reach
// both API processes through LISTEN/NOTIFY. On B, the process that only
// hears of them: 200 subscribers (half never reading) and on A 50 more get
// every event in order, with no gaps and no repeats; /healthz of both stays
// within healthz-bounds.ts's bound and their RSS within docs/server.md's. The
// caps and the buffer limit hold on B: over its per-job cap it answers 429
// with Retry-After while A, which counts its own streams, still admits one;
// a non-reader on B is disconnected at its buffer limit and resumes with
// Last-Event-ID after its last whole frame.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { DataDir } from "../src/data-dir.js";
import { openDatabase } from "../src/db/connect.js";
import { dropSupersededSteps } from "../src/events/superseded-steps.js";
import { Store } from "../src/store/store.js";
import { assertWhole, seedCompletedJob, upTo } from "./event-log.js";
import {
  call,
  createJob,
  createPgDatabase,
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
  until,
  uploadDataset,
  waitForExit,
} from "./harness.js";
import { assertHealthz, healthSummary, loadLine, statsLine, watchLoad } from "./healthz-bounds.js";
import {
  closedByServer,
  connectionOpen,
  drain,
  follow,
  lastWholeFrameId,
  openNonReader,
  probeHealth,
  watchRss,
} from "./sse-load.js";

/** Streams per job on each API process (each counts its own). */
const PER_JOB = 250;
/** More than the kernel's socket buffers take (about 4 MB on loopback): a non-reader stalls and is dropped. */
const COMPLETED_EVENTS = 40_000;
/** docs/server.md#event-streams. */
const RSS_BOUND = 400 * 1024 * 1024;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

describe("event streams on two API processes over one PostgreSQL", { timeout: 300_000 }, () => {
  const dataDir = tempDir("streams-cluster");
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let a: ServerProcess;
  let b: ServerProcess;
  let worker: Awaited<ReturnType<typeof spawnReady>>;
  let store: Store;
  let id: Identity;
  let running: string;
  let held: string;
  let completed: string;
  const probes: ReturnType<typeof probeHealth>[] = [];

  before(async () => {
    database = await createPgDatabase();
    const args = [
      "--workers",
      "0",
      "--event-streams-per-job",
      String(PER_JOB),
      "--event-streams-per-identity",
      "1000",
      "--rate-limit-identity",
      "off",
    ];
    [a, b] = await Promise.all([
      startServerProcess({ dataDir, databaseUrl: database.url, args }),
      startServerProcess({ dataDir, databaseUrl: database.url, args }),
    ]);
    store = new Store(
      await openDatabase({ databaseUrl: database.url, sqlitePath: new DataDir(dataDir).sqlitePath }),
    );
    id = await newIdentity(a.apiUrl);
    const dataset = await uploadDataset(a.apiUrl, id);
    completed = (await createJob(a.apiUrl, id, dataset.id)).id;
    await seedCompletedJob(store, completed, COMPLETED_EVENTS);
    running = (await createJob(a.apiUrl, id, dataset.id, { maxSteps: 100_000, saveSteps: 100_000 })).id;
    worker = await spawnReady("worker", [
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
    ]);
    await until(
      "the job to stream events",
      async () => (await store.jobs.eventsPage(running, 20, 1)).length > 0,
      60_000,
    );
    // The worker runs one job at a time: this one stays queued, and streams on it stay open.
    held = (await createJob(a.apiUrl, id, dataset.id)).id;
    for (const server of [a, b]) probes.push(probeHealth(server.apiUrl, server.edgeUrl));
    await new Promise((resolve) => setTimeout(resolve, 500));
  });

  after(async () => {
    for (const probe of probes) probe.stop();
    if (worker) {
      worker.proc.kill("SIGTERM");
      await waitForExit(worker.proc);
    }
    await Promise.all([a?.stop(), b?.stop()]);
    await store?.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("caps streams per API process: B answers 429 over its per-job cap while A still admits one", async () => {
    const open = async (server: ServerProcess) => {
      const controller = new AbortController();
      const response = await fetch(`${server.apiUrl}/v1/jobs/${held}/events`, {
        headers: { authorization: `Bearer ${id.token}` },
        signal: controller.signal,
      });
      return { status: response.status, response, close: () => controller.abort() };
    };
    const onB = await Promise.all(Array.from({ length: PER_JOB }, () => open(b)));
    assert.deepEqual(new Set(onB.map((s) => s.status)), new Set([200]));
    const over = await open(b);
    assert.equal(over.status, 429);
    assert.equal(over.response.headers.get("retry-after"), "5");
    assert.deepEqual(await over.response.json(), {
      error: {
        code: "rate_limit_exceeded",
        message: `too many event streams open on this job (limit ${PER_JOB} at once); retry after 5 s`,
      },
    });
    const onA = await open(a);
    assert.equal(onA.status, 200, "A counts only its own streams");
    for (const s of [...onB, onA]) s.close();
  });

  it("subscribers on both processes get every live event in order, once; /healthz and RSS of both stay bounded", async () => {
    const rss = [watchRss(a.proc.pid!), watchRss(b.proc.pid!)];
    const loadWatch = watchLoad(
      () => [a.proc.pid, b.proc.pid, worker.proc.pid, ...probes.map((p) => p.pid)],
      {
        postgres: true,
      },
    );
    const since = Date.now();
    const nonReaders = Array.from({ length: 100 }, () => openNonReader(b.apiUrl, running, id.token));
    const followers = [
      ...Array.from({ length: 5 }, () => follow(b.apiUrl, running, id.token, 120_000)),
      ...Array.from({ length: 5 }, () => follow(a.apiUrl, running, id.token, 120_000)),
    ];
    const drainers = [
      ...Array.from({ length: 95 }, () => drain(b.apiUrl, running, id.token, 120_000)),
      ...Array.from({ length: 45 }, () => drain(a.apiUrl, running, id.token, 120_000)),
    ];
    // Live events flow to both crowds for a while; the job is cancelled through B and every stream ends.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    assert.equal(
      (await call(b.apiUrl, "POST", `/v1/jobs/${running}/cancel`, { token: id.token })).status,
      200,
    );
    const [followed, drained] = await Promise.all([Promise.all(followers), Promise.all(drainers)]);
    const load = loadWatch.stop();
    const peaks = rss.map((r) => r.peak());
    for (const r of rss) r.stop();
    for (const s of nonReaders) s.destroy();
    // The worker would run the held job next (its streams were only for the caps). On a fast machine it
    // may have finished already while the followers drained: then the cancel is a 409 and the job has ended.
    const heldCancel = await call(a.apiUrl, "POST", `/v1/jobs/${held}/cancel`, { token: id.token });
    if (heldCancel.status !== 200) {
      assert.equal(heldCancel.status, 409);
      const heldJob = (await store.jobs.get(held))!;
      assert.ok(["completed", "failed", "cancelled"].includes(heldJob.status), heldJob.status);
    }

    const expected = dropSupersededSteps(await store.jobs.eventsAfter(running, 0)).map((e) => e.seq);
    assert.ok(expected.length > 20, `${expected.length} events streamed`);
    for (const [i, f] of followed.entries())
      assertWhole(f, expected, `follower ${i} on ${i < 5 ? "B" : "A"}`);
    assert.equal(followed[0].events.at(-2), "training.cancelled");
    for (const [i, d] of drained.entries()) assert.ok(d.ended, `reader ${i} reached the end`);
    for (const [i, name] of ["A", "B"].entries()) {
      const health = healthSummary(probes[i].since(since));
      console.log(
        `API process ${name}: /healthz in ${health.n} rounds: api ${statsLine(health.api)}, edge ${statsLine(health.edge)}; bare control server ${statsLine(health.control)}; RSS peak ${mib(peaks[i])}; ${loadLine(load)}`,
      );
      assertHealthz(`API process ${name}`, health, load);
      assert.ok(peaks[i] < RSS_BOUND, `${name}'s RSS peak ${mib(peaks[i])} < ${mib(RSS_BOUND)}`);
    }
  });

  it("a non-reader on B is disconnected at its buffer limit and resumes with Last-Event-ID", async () => {
    const sockets = Array.from({ length: 3 }, () => openNonReader(b.apiUrl, completed, id.token));
    // The kernel takes a few MB of the 13 MB history; then the stream stalls and B drops it.
    await until("B to drop the non-readers", async () => sockets.every((s) => !connectionOpen(s)), 60_000);
    for (const socket of sockets) {
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      assert.ok(await closedByServer(socket, 20_000), "B closed the non-reader's connection");
      const text = Buffer.concat(chunks).toString("latin1");
      const last = lastWholeFrameId(text) ?? 0;
      assert.ok(last > 0 && last < COMPLETED_EVENTS, `disconnected after event ${last}`);
      const ids = [...text.matchAll(/\nid: (\d+)\n/g)].map((m) => Number(m[1]));
      assert.deepEqual(ids.slice(0, last), upTo(last));
      const rest = await readSse(
        await openEvents(b.apiUrl, id.token, completed, { "last-event-id": String(last) }),
        { timeoutMs: 60_000 },
      );
      assert.deepEqual(
        rest.frames.map((f) => Number(f.id)),
        upTo(COMPLETED_EVENTS).slice(last),
      );
      assert.equal(rest.frames.at(-1)?.event, "end");
    }
  });
});
