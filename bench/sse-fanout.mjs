// SSE fan-out: how `svc server` holds up while many clients open a job's
// event stream (GET /v1/jobs/:id/events) at once, half of them never reading,
// on a completed job with a long history (20,000 stored events, about 6.6 MB,
// by default). For each crowd size it reports the cloud API's and the edge's
// /healthz (p50, p99, max, probed every 50 ms from a separate process), the
// server's peak RSS, how long the readers took to get every event, and how
// many of them the server disconnected (and they resumed with Last-Event-ID),
// next to the machine's load: its load average, and the runnable tasks of
// processes other than the bench's, the server's and PostgreSQL's.
//
//   npm run build && node bench/sse-fanout.mjs [--subscribers 100,500,2000] [--events 20000] [--database-url postgres://...]
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { api, identity, startServer, tinyModel } from "./serve-harness.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (path) => import(join(root, "packages/server/dist", path));
const { DataDir } = await dist("src/data-dir.js");
const { openDatabase } = await dist("src/db/connect.js");
const { Store } = await dist("src/store/store.js");
const { drain, follow, openNonReader, probeHealth, watchRss } = await dist("test/sse-load.js");
const { loadLine, watchLoad } = await dist("test/healthz-bounds.js");
const { seedCompletedJob } = await dist("test/event-log.js");

const { values } = parseArgs({
  options: {
    subscribers: { type: "string", default: "100,500,2000" },
    events: { type: "string", default: "20000" },
    "database-url": { type: "string" },
  },
});
const crowds = values.subscribers.split(",").map(Number);
const events = Number(values.events);
const databaseUrl = values["database-url"] ?? null;

const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-sse-"));
const model = await tinyModel({ hiddenSize: 64, intermediateSize: 128, numHiddenLayers: 2 });
const most = String(Math.max(...crowds) * 2);
const server = await startServer(model, [
  "--data-dir",
  dataDir,
  "--workers",
  "0",
  "--event-streams-per-identity",
  most,
  "--event-streams-per-job",
  most,
  ...(databaseUrl ? ["--database-url", databaseUrl] : []),
]);
const who = await identity(server.apiUrl);
const rows = Array.from({ length: 16 }, (_, i) =>
  JSON.stringify({
    messages: [
      { role: "user", content: `Count from ${i}.` },
      { role: "assistant", content: `${i} ${i + 1}` },
    ],
  }),
);
const { dataset } = await api(server.apiUrl, "POST", `/v1/datasets?${who.scope}&name=bench.jsonl`, {
  token: who.token,
  body: rows.join("\n"),
});
const { job } = await api(server.apiUrl, "POST", `/v1/jobs?${who.scope}`, {
  token: who.token,
  json: { name: "fanout", baseModel: "bench/tiny", datasetId: dataset.id, hyperparameters: { maxSteps: 1 } },
});

// The history, written straight to the store: a run's events as the engine reports them.
const store = new Store(await openDatabase({ databaseUrl, sqlitePath: new DataDir(dataDir).sqlitePath }));
await seedCompletedJob(store, job.id, events);
await store.close();

const probe = probeHealth(server.apiUrl, server.edgeUrl);
await new Promise((resolve) => setTimeout(resolve, 1000));
const at = (list, q) => list[Math.min(list.length - 1, Math.floor(q * list.length))];
const stats = (samples, key) => {
  const list = samples.map((s) => s[key]).sort((a, b) => a - b);
  return `p50 ${at(list, 0.5)} p99 ${at(list, 0.99)} max ${list.at(-1)} ms`;
};
const mib = (bytes) => `${Math.round(bytes / 1024 / 1024)} MiB`;

console.log(
  `SSE fan-out on ${databaseUrl ? "PostgreSQL" : "SQLite"}: a completed job with ${events} stored events; half of each crowd never reads, the other half reads every byte (4 of them parse every frame); ${availableParallelism()} cores`,
);
for (const n of crowds) {
  const rss = watchRss(server.pid);
  const load = watchLoad(() => [server.pid, probe.pid], { postgres: databaseUrl !== null });
  const since = Date.now();
  const nonReaders = Array.from({ length: n / 2 }, () => openNonReader(server.apiUrl, job.id, who.token));
  const followers = Array.from({ length: 4 }, () => follow(server.apiUrl, job.id, who.token, 600_000));
  const drainers = Array.from({ length: n / 2 - 4 }, () => drain(server.apiUrl, job.id, who.token, 600_000));
  const followed = await Promise.all(followers);
  const drained = await Promise.all(drainers);
  const seconds = (Date.now() - since) / 1000;
  const samples = probe.since(since);
  const peak = rss.peak();
  rss.stop();
  const seen = load.stop();
  for (const f of followed)
    if (f.ids.length !== events || f.ids.some((id, i) => id !== i + 1))
      throw new Error("a reader missed events");
  if (drained.some((d) => !d.ended)) throw new Error("a reader did not reach the end");
  const resumed = [...followed, ...drained].reduce((sum, r) => sum + r.reconnects, 0);
  for (const s of nonReaders) s.destroy();
  console.log(
    `  ${String(n).padStart(5)} subscribers: readers done in ${seconds.toFixed(1)} s (resumed ${resumed} times); /healthz over ${samples.length} rounds: api ${stats(samples, "api")}, edge ${stats(samples, "edge")}, bare control server ${stats(samples, "control")}; server RSS peak ${mib(peak)}; ${loadLine(seen)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 2000));
}
probe.stop();
await server.stop();
rmSync(dataDir, { recursive: true, force: true });
