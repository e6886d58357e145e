// Event streams at scale, on real processes, on SQLite and on PostgreSQL: 500
// subscribers at once (half never reading) on a running job with 5,000 stored
// events, then 50 and 500 on a completed job with 20,000; the cloud API's and
// the edge's /healthz stay under 200 ms throughout (measured from a separate
// process; on a machine that other processes load, a bound scaled by that
// load: healthz-bounds.ts), the server's RSS within its documented bound, and
// every reader gets every event in order, once. Also: what a client resuming
// across a resumed run receives, and the caps on streams per identity and per
// job. The same on two API processes: event-streams-cluster.test.ts.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { parseServerArgs } from "../src/cli.js";
import { DataDir } from "../src/data-dir.js";
import { openDatabase } from "../src/db/connect.js";
import { DEFAULT_EVENT_STREAM_LIMITS } from "../src/events/stream-caps.js";
import { dropSupersededSteps } from "../src/events/superseded-steps.js";
import type { ServerOptions } from "../src/server.js";
import type { NewJobEvent } from "../src/store/job-store.js";
import { Store } from "../src/store/store.js";
import { appendEvents, assertWhole, logEvent, seedCompletedJob, started, upTo } from "./event-log.js";
import {
  type Backend,
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
import {
  assertHealthz,
  HEALTHZ_MS,
  healthSummary,
  loadLine,
  MIN_ROUNDS,
  statsLine,
  watchLoad,
} from "./healthz-bounds.js";
import {
  closedByServer,
  drain,
  follow,
  lastWholeFrameId,
  openNonReader,
  probeHealth,
  watchRss,
} from "./sse-load.js";

const RUNNING_EVENTS = 5_000;
const COMPLETED_EVENTS = 20_000;
/** docs/server.md#event-streams: the server's RSS stays below this with 500 streams on 20,000 events. */
const RSS_BOUND = 400 * 1024 * 1024;
const KEEPALIVE_MS = 2000;

const serverArgs = [
  "--sse-keepalive-ms",
  String(KEEPALIVE_MS),
  "--event-streams-per-identity",
  "1000",
  "--event-streams-per-job",
  "1000",
  "--rate-limit-identity",
  "off",
];

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`event streams at scale (${backend})`, { timeout: 240_000 }, () => {
    const dataDir = tempDir("streams");
    let database: Awaited<ReturnType<typeof createPgDatabase>> | null = null;
    let server: ServerProcess;
    let worker: Awaited<ReturnType<typeof spawnReady>> | null = null;
    let store: Store;
    let id: Identity;
    let running: string;
    let completed: string;
    let resumedJob: string;
    let probe: ReturnType<typeof probeHealth>;

    before(async () => {
      database = backend === "postgres" ? await createPgDatabase() : null;
      const start = (workers: string) =>
        startServerProcess({
          dataDir,
          databaseUrl: database?.url,
          args: [...serverArgs, "--workers", workers],
        });
      server = await start("0");
      store = new Store(
        await openDatabase({ databaseUrl: database?.url, sqlitePath: new DataDir(dataDir).sqlitePath }),
      );
      id = await newIdentity(server.apiUrl);
      const dataset = await uploadDataset(server.apiUrl, id);
      completed = (await createJob(server.apiUrl, id, dataset.id)).id;
      await seedCompletedJob(store, completed, COMPLETED_EVENTS);
      // Run 1: started (id 1), steps 1..300 (2..301), checkpoint at 300 (302), steps 301..600 (303..602), then
      // killed; run 2 resumed from step 300: started (603), steps 301..600 (604..903), completed (904), end (905).
      resumedJob = (await createJob(server.apiUrl, id, dataset.id)).id;
      const steps = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => logEvent(from + i));
      await appendEvents(store, resumedJob, [
        started(),
        ...steps(1, 300),
        { type: "checkpoint.saved", step: 300, artifact: { name: "checkpoint-300" } } as NewJobEvent,
        ...steps(301, 600),
        started(300),
        ...steps(301, 600),
      ]);
      await store.jobs.transition(resumedJob, { status: ["queued"] }, { status: "completed" }, [
        {
          type: "training.completed",
          artifacts: [],
          metrics: { steps: 600, finalLoss: null, evalLoss: null },
        },
        { type: "end" },
      ] as NewJobEvent[]);
      // An earlier run's 5,000 events, then a real training run of the tiny model streams live.
      running = (await createJob(server.apiUrl, id, dataset.id, { maxSteps: 100_000, saveSteps: 100_000 }))
        .id;
      await appendEvents(store, running, [
        started(),
        ...Array.from({ length: RUNNING_EVENTS - 1 }, (_, i) => logEvent(i + 1)),
      ]);
      if (database) {
        // Events reach the API process from a `svc worker` through LISTEN/NOTIFY.
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
      } else {
        await server.stop();
        server = await start("1");
      }
      await until(
        "the job to stream live events",
        async () => (await store.jobs.eventsPage(running, RUNNING_EVENTS + 2, 1)).length > 0,
        60_000,
      );
      probe = probeHealth(server.apiUrl, server.edgeUrl);
      await new Promise((resolve) => setTimeout(resolve, 500));
    });

    after(async () => {
      probe?.stop();
      if (worker) {
        worker.proc.kill("SIGTERM");
        await waitForExit(worker.proc);
      }
      await server?.stop();
      await store?.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** n subscribers at once on `jobId`: half never read, a few parse every frame, the rest read and discard. */
    async function crowd(jobId: string, n: number, whileOpen: () => Promise<void> = async () => {}) {
      const rss = watchRss(server.proc.pid!);
      const loadWatch = watchLoad(() => [server.proc.pid, worker?.proc.pid, probe.pid], {
        postgres: backend === "postgres",
      });
      const since = Date.now();
      const followers = n >= 100 ? 10 : 5;
      const nonReaders = Array.from({ length: n / 2 }, () => openNonReader(server.apiUrl, jobId, id.token));
      const reading = [
        ...Array.from({ length: followers }, () => follow(server.apiUrl, jobId, id.token, 90_000)),
        ...Array.from({ length: n / 2 - followers }, () => drain(server.apiUrl, jobId, id.token, 90_000)),
      ];
      await whileOpen();
      const results = await Promise.all(reading);
      await probe.rounds(since, MIN_ROUNDS);
      const health = healthSummary(probe.since(since));
      const slow = probe.since(since).filter((x) => x.api > HEALTHZ_MS || x.edge > HEALTHZ_MS);
      if (slow.length > 0) console.log(`slow /healthz rounds: ${JSON.stringify(slow)}`);
      const peak = rss.peak();
      rss.stop();
      const load = loadWatch.stop();
      return {
        nonReaders,
        followed: results.slice(0, followers) as Awaited<ReturnType<typeof follow>>[],
        drained: results.slice(followers) as Awaited<ReturnType<typeof drain>>[],
        health,
        peak,
        load,
        seconds: (Date.now() - since) / 1000,
      };
    }

    function assertResponsive(what: string, run: Awaited<ReturnType<typeof crowd>>): void {
      const { health } = run;
      const drops =
        run.followed.reduce((n, f) => n + f.reconnects, 0) +
        run.drained.reduce((n, d) => n + d.reconnects, 0);
      console.log(
        `${backend} ${what}: ${run.seconds.toFixed(1)} s; /healthz in ${health.n} rounds: api ${statsLine(health.api)}, edge ${statsLine(health.edge)}; bare control server ${statsLine(health.control)}; server RSS peak ${mib(run.peak)}; readers resumed ${drops} times; ${loadLine(run.load)}`,
      );
      assertHealthz(what, health, run.load);
      assert.ok(run.peak < RSS_BOUND, `RSS peak ${mib(run.peak)} < ${mib(RSS_BOUND)}`);
      for (const [i, d] of run.drained.entries()) assert.ok(d.ended, `reader ${i} reached the end`);
    }

    it("500 subscribers, half never reading, on a running job with 5,000 stored events", {
      timeout: 120_000,
    }, async () => {
      const run = await crowd(running, 500, async () => {
        // Live events flow to the crowd for a while, then the job is cancelled and every stream ends.
        await new Promise((resolve) => setTimeout(resolve, 4000));
        const cancel = await call(server.apiUrl, "POST", `/v1/jobs/${running}/cancel`, { token: id.token });
        assert.equal(cancel.status, 200);
      });
      // What a reader of the whole log gets (the real run restarted the job, superseding the stored steps).
      const expected = dropSupersededSteps(await store.jobs.eventsAfter(running, 0)).map((e) => e.seq);
      for (const [i, f] of run.followed.entries()) assertWhole(f, expected, `follower ${i}`);
      assert.ok(
        (run.followed[0].ids.at(-1) ?? 0) > RUNNING_EVENTS + 10,
        "live events came after the stored ones",
      );
      assert.equal(run.followed[0].events.at(-2), "training.cancelled");
      for (const s of run.nonReaders) s.destroy();
      assertResponsive("running job, 500 subscribers", run);
    });

    for (const n of [50, 500]) {
      it(`${n} subscribers, half never reading, on a completed job with 20,000 events`, {
        timeout: 120_000,
      }, async () => {
        const run = await crowd(completed, n);
        for (const [i, f] of run.followed.entries()) assertWhole(f, upTo(COMPLETED_EVENTS), `follower ${i}`);
        // A non-reader got whole frames from the first: all of them when the kernel's socket buffers
        // took the whole history (loopback buffers grow to megabytes), else it stalled, the server
        // disconnected it, and Last-Event-ID resumes after its last whole frame.
        const texts = await Promise.all(
          run.nonReaders.map(async (socket, i) => {
            const chunks: Buffer[] = [];
            if (i < 3) socket.on("data", (chunk: Buffer) => chunks.push(chunk));
            const closed = await closedByServer(socket, 3 * KEEPALIVE_MS + 8000);
            socket.destroy();
            return { closed, text: Buffer.concat(chunks).toString("latin1") };
          }),
        );
        assert.ok(
          texts.every((t) => t.closed),
          "the server closed every non-reader's connection",
        );
        let dropped = 0;
        for (const { text } of texts.slice(0, 3)) {
          const ids = [...text.matchAll(/\nid: (\d+)\n/g)].map((m) => Number(m[1]));
          const last = lastWholeFrameId(text) ?? 0;
          assert.deepEqual(
            ids.slice(0, last),
            Array.from({ length: last }, (_, i) => i + 1),
          );
          if (last === COMPLETED_EVENTS) continue;
          dropped++;
          const rest = await readSse(
            await openEvents(server.apiUrl, id.token, completed, { "last-event-id": String(last) }),
            { timeoutMs: 60_000 },
          );
          assert.equal(rest.frames[0].id, String(last + 1));
          assert.equal(rest.frames.length, COMPLETED_EVENTS - last);
          assert.equal(rest.frames.at(-1)?.event, "end");
        }
        console.log(
          `${backend}: of 3 non-readers checked, ${dropped} were disconnected before the end and resumed`,
        );
        assertResponsive(`completed job, ${n} subscribers`, run);
      });
    }

    it("a client resuming across a resumed run gets the resumed run's training.started first, then its steps", async () => {
      const read = async (lastEventId: number) => {
        const got = await readSse(
          await openEvents(server.apiUrl, id.token, resumedJob, { "last-event-id": String(lastEventId) }),
        );
        return got.frames.map((f) => ({ id: Number(f.id), event: f.event, data: JSON.parse(f.data) }));
      };
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
      // From the start: the superseded steps are left out (ids jump from 302 to 603), each step once.
      const fresh = await read(0);
      assert.deepEqual(
        fresh.map((f) => f.id),
        [...range(1, 302), ...range(603, 905)],
      );
      assert.deepEqual(
        fresh.filter((f) => f.event === "training.log").map((f) => f.data.step),
        range(1, 600),
      );
      // A client that got run 1's frames live up to the kill (602), or part of them (450): the resumed run's
      // training.started comes first, naming the step to drop its frames after, then the resumed steps.
      for (const lastEventId of [602, 450, 302]) {
        const resumed = await read(lastEventId);
        assert.equal(resumed[0].id, 603, `after ${lastEventId}`);
        assert.equal(resumed[0].event, "training.started");
        assert.equal(resumed[0].data.resumedFromStep, 300);
        assert.deepEqual(
          resumed.filter((f) => f.event === "training.log").map((f) => f.data.step),
          range(301, 600),
        );
      }
      // After the resume: just what follows.
      assert.deepEqual(
        (await read(700)).map((f) => f.id),
        range(701, 905),
      );
    });
  });
}

describe("caps on concurrent event streams", () => {
  it("come from --event-streams-per-identity, --event-streams-per-job and --event-stream-buffer-bytes", () => {
    const parsed = (argv: string[]) => (parseServerArgs(argv) as ServerOptions).eventStreams;
    assert.deepEqual(parsed([]), DEFAULT_EVENT_STREAM_LIMITS);
    assert.deepEqual(
      parsed([
        "--event-streams-per-identity",
        "off",
        "--event-streams-per-job",
        "9",
        "--event-stream-buffer-bytes",
        "65536",
      ]),
      { perIdentity: null, perJob: 9, bufferBytes: 65536 },
    );
    assert.throws(
      () => parsed(["--event-streams-per-job", "0"]),
      /--event-streams-per-job must be an integer from 1/,
    );
    assert.throws(
      () => parsed(["--event-stream-buffer-bytes", "1000"]),
      /--event-stream-buffer-bytes must be an integer from 65536/,
    );
  });

  let server: ServerProcess;
  before(async () => {
    server = await startServerProcess({
      args: ["--workers", "0", "--event-streams-per-identity", "5", "--event-streams-per-job", "3"],
    });
  });
  after(async () => {
    await server.stop();
  });

  it("answers 429 rate_limit_exceeded with Retry-After past a cap, and frees the slot when a stream closes", async () => {
    const id = await newIdentity(server.apiUrl);
    const dataset = await uploadDataset(server.apiUrl, id);
    const [a, b] = [
      (await createJob(server.apiUrl, id, dataset.id)).id,
      (await createJob(server.apiUrl, id, dataset.id)).id,
    ];
    const open = async (jobId: string) => {
      const controller = new AbortController();
      const response = await fetch(`${server.apiUrl}/v1/jobs/${jobId}/events`, {
        headers: { authorization: `Bearer ${id.token}` },
        signal: controller.signal,
      });
      return { response, close: () => controller.abort() };
    };
    const onA = [await open(a), await open(a), await open(a)];
    for (const s of onA) assert.equal(s.response.status, 200);
    const overJob = await open(a);
    assert.equal(overJob.response.status, 429);
    assert.equal(overJob.response.headers.get("retry-after"), "5");
    assert.deepEqual(await overJob.response.json(), {
      error: {
        code: "rate_limit_exceeded",
        message: "too many event streams open on this job (limit 3 at once); retry after 5 s",
      },
    });
    const onB = [await open(b), await open(b)];
    for (const s of onB) assert.equal(s.response.status, 200);
    const overIdentity = await open(b);
    assert.equal(overIdentity.response.status, 429);
    assert.equal(overIdentity.response.headers.get("retry-after"), "5");
    assert.match(
      ((await overIdentity.response.json()) as { error: { message: string } }).error.message,
      /^too many event streams open for this identity \(limit 5 at once\)/,
    );
    // Another identity has its own streams (though not on job a, which is full).
    const other = await newIdentity(server.apiUrl);
    const theirs = await createJob(server.apiUrl, other, (await uploadDataset(server.apiUrl, other)).id);
    const otherStream = await openEvents(server.apiUrl, other.token, theirs.id);
    assert.equal(otherStream.status, 200);
    await otherStream.body?.cancel();
    // A closed stream gives its slot back.
    onA[0].close();
    const again = await until("a freed slot", async () => {
      const s = await open(a);
      if (s.response.status === 200) return s;
      await s.response.body?.cancel();
      return null;
    });
    for (const s of [...onA.slice(1), ...onB, again]) s.close();
  });
});
