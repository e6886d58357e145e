// SSE fan-out: training speed of one job while 200 clients follow its event
// stream (GET /v1/jobs/:id/events) versus while nobody watches. Runs
// none / watched alternately and compares the engine's reported training
// tokens/s and the job's wall-clock training time.
//
//   npm run build && nice -n 10 node bench/sse-fanout.mjs [--subscribers 200] [--steps 200] [--rounds 2]
import { parseArgs } from "node:util";
import { allEvents, api, identity, startServer, tinyModel } from "./serve-harness.mjs";

const { values } = parseArgs({
  options: {
    subscribers: { type: "string", default: "200" },
    steps: { type: "string", default: "200" },
    rounds: { type: "string", default: "2" },
  },
});
const subscribers = Number(values.subscribers);
const steps = Number(values.steps);

/** Reads one SSE stream to its end; returns the number of frames. */
async function follow(url, token) {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let frames = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    const parts = text.split("\n\n");
    text = parts.pop();
    frames += parts.filter((p) => /^id: /m.test(p)).length;
  }
  return frames;
}

const model = await tinyModel({ hiddenSize: 64, intermediateSize: 128, numHiddenLayers: 2 });
const server = await startServer(model);
process.on("exit", () => server.kill());
const who = await identity(server.apiUrl);
const rows = Array.from({ length: 64 }, (_, i) =>
  JSON.stringify({
    messages: [
      { role: "user", content: `Count from ${i} to ${i + 5}.` },
      { role: "assistant", content: `${i} ${i + 1} ${i + 2} ${i + 3} ${i + 4} ${i + 5}` },
    ],
  }),
);
const { dataset } = await api(server.apiUrl, "POST", `/v1/datasets?${who.scope}&name=bench.jsonl`, {
  token: who.token,
  body: rows.join("\n"),
});

async function run(watchers) {
  const { job } = await api(server.apiUrl, "POST", `/v1/jobs?${who.scope}`, {
    token: who.token,
    json: {
      name: `fanout-${watchers}`,
      baseModel: "bench/tiny",
      datasetId: dataset.id,
      hyperparameters: { lora: { r: 8, alpha: 16 }, maxSteps: steps, batchSize: 4 },
    },
  });
  const url = `${server.apiUrl}/v1/jobs/${job.id}/events`;
  const followers = Array.from({ length: watchers }, () => follow(url, who.token));
  if (watchers === 0) {
    for (;;) {
      const { job: now } = await api(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: who.token });
      if (now.status !== "queued" && now.status !== "running") break;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const frameCounts = await Promise.all(followers);
  const events = await allEvents(server.apiUrl, who.token, job.id);
  if (frameCounts.some((n) => n !== events.length))
    throw new Error(`a subscriber missed events: ${frameCounts} vs ${events.length}`);
  const logs = events.filter((e) => e.type === "training.log").slice(1);
  const tokensPerSecond = logs.reduce((s, e) => s + e.tokensPerSecond, 0) / logs.length;
  const completed = events.find((e) => e.type === "training.completed");
  return { tokensPerSecond, trainSeconds: completed.metrics.trainSeconds, frames: events.length };
}

await run(0); // warm-up: model load and JIT
const results = { 0: [], [subscribers]: [] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const watchers of [0, subscribers]) results[watchers].push(await run(watchers));
}
const mean = (list, key) => list.reduce((s, r) => s + r[key], 0) / list.length;
console.log(
  `SSE fan-out: one job of ${steps} steps, ${values.rounds} rounds, ${results[subscribers][0].frames} events per job`,
);
for (const watchers of [0, subscribers]) {
  const list = results[watchers];
  console.log(
    `  ${String(watchers).padStart(4)} subscribers: ${mean(list, "tokensPerSecond").toFixed(0).padStart(7)} training tokens/s   ${mean(list, "trainSeconds").toFixed(2)} s training`,
  );
}
const ratio = mean(results[subscribers], "tokensPerSecond") / mean(results[0], "tokensPerSecond");
const timeRatio = mean(results[subscribers], "trainSeconds") / mean(results[0], "trainSeconds");
console.log(
  `  with/without ${subscribers} subscribers: tokens/s ratio ${ratio.toFixed(3)}   training time ratio ${timeRatio.toFixed(3)}`,
);
await server.stop();
