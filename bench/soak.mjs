// Soak: one long LoRA job on the bundled svc/pico-llama through `svc server`,
// with concurrent chat requests at the edge (the official openai client) for
// the whole run. Passes when the job completes in one training process (no
// crash, no restart), every chat request answers, and the server stays up.
// Prints the run's duration, training speed, chat latency, and the peak RSS of
// the server process and of its training and inference processes.
//
//   npm run build && nice node bench/soak.mjs [--steps 20000] [--chats 8] [--runs 1]
//        [--batch-size 1] [--max-length 128] [--save-steps 1000] [--first-run 1]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { allEvents, api, identity, startServer, watchMemory } from "./serve-harness.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "20000" },
    chats: { type: "string", default: "8" },
    runs: { type: "string", default: "1" },
    // Runs are numbered (and seeded) from here, to continue a series.
    "first-run": { type: "string", default: "1" },
    "batch-size": { type: "string", default: "1" },
    "max-length": { type: "string", default: "128" },
    "save-steps": { type: "string", default: "1000" },
  },
});
const steps = Number(values.steps);
const chats = Number(values.chats);
const MODEL = "svc/pico-llama";
const data = join(root, "templates/ticket-triage/data");
const prompts = readFileSync(join(data, "eval.jsonl"), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line).messages.filter((m) => m.role !== "assistant"));

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

async function soak(run) {
  const server = await startServer(join(root, "models/pico-llama"), ["--job-poll-ms", "200"], MODEL);
  const memory = watchMemory(server.pid);
  const who = await identity(server.apiUrl);
  const upload = await api(server.apiUrl, "POST", `/v1/datasets?${who.scope}&name=train.jsonl`, {
    token: who.token,
    body: readFileSync(join(data, "train.jsonl")),
    headers: { "content-type": "application/x-ndjson" },
  });
  const { deployment } = await api(server.apiUrl, "POST", `/v1/endpoints?${who.scope}`, {
    token: who.token,
    json: { slug: `soak-${process.pid}-${run}`, target: { kind: "base_model", baseModel: MODEL } },
  });
  const { key } = await api(server.apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
    token: who.token,
    json: { label: "soak" },
  });
  const started = performance.now();
  const { job } = await api(server.apiUrl, "POST", `/v1/jobs?${who.scope}`, {
    token: who.token,
    json: {
      name: "soak",
      baseModel: MODEL,
      datasetId: upload.dataset.id,
      hyperparameters: {
        lora: { r: 8, alpha: 16, maxLength: Number(values["max-length"]) },
        maxSteps: steps,
        batchSize: Number(values["batch-size"]),
        learningRate: 1e-3,
        saveSteps: Number(values["save-steps"]),
        seed: run,
      },
    },
  });

  // Chat loops until the job ends.
  const openai = new OpenAI({
    apiKey: key.plaintext,
    baseURL: `${server.edgeUrl}/d/${deployment.slug}/v1`,
    maxRetries: 0,
  });
  let running = true;
  const latencies = [];
  const errors = [];
  const loops = Array.from({ length: chats }, async (_, i) => {
    for (let n = 0; running; n++) {
      const t0 = performance.now();
      try {
        await openai.chat.completions.create({
          model: MODEL,
          messages: prompts[(i * 7919 + n) % prompts.length],
          max_tokens: 32,
          temperature: 0.7,
        });
        latencies.push(performance.now() - t0);
      } catch (error) {
        errors.push(error.message);
      }
    }
  });
  let final;
  for (;;) {
    await new Promise((r) => setTimeout(r, 2000));
    final = (await api(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: who.token })).job;
    if (!["queued", "running"].includes(final.status)) break;
  }
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await Promise.all(loops);
  const peaks = memory.stop();
  const log = await allEvents(server.apiUrl, who.token, job.id);
  const starts = log.filter((e) => e.type === "training.started").length;
  const trainLogs = log.filter((e) => e.type === "training.log" && typeof e.tokensPerSecond === "number");
  const tokensPerSecond =
    trainLogs.reduce((s, e) => s + e.tokensPerSecond, 0) / Math.max(1, trainLogs.length);
  const serverAlive =
    (await fetch(`${server.apiUrl}/healthz`)
      .then((r) => r.ok)
      .catch(() => false)) === true;
  await server.stop();
  latencies.sort((a, b) => a - b);
  const mb = (kb) => (kb ? `${(kb / 1024).toFixed(0)} MB` : "n/a");
  const ok = final.status === "completed" && starts === 1 && errors.length === 0 && serverAlive;
  console.log(
    [
      `run ${run}: ${ok ? "PASS" : "FAIL"}  job ${final.status} after ${seconds.toFixed(0)} s (${(steps / seconds).toFixed(1)} steps/s, ${tokensPerSecond.toFixed(0)} train tokens/s)`,
      `  training processes started: ${starts} (1 = no crash or restart); server up at the end: ${serverAlive}`,
      `  chat at the edge: ${latencies.length} answered, ${errors.length} errors, p50 ${percentile(latencies, 50)?.toFixed(0)} ms, p99 ${percentile(latencies, 99)?.toFixed(0)} ms`,
      `  peak RSS: server ${mb(peaks.server)}, training process ${mb(peaks.training)}, inference process ${mb(peaks.inference)}`,
      ...(final.error ? [`  error: ${final.error}`] : []),
      ...(errors.length ? [`  first chat error: ${errors[0]}`] : []),
    ].join("\n"),
  );
  return ok;
}

console.log(
  `soak: ${steps} steps (batch ${values["batch-size"]}, maxLength ${values["max-length"]}, checkpoint every ${values["save-steps"]}) on ${MODEL}, ${chats} concurrent chats at the edge`,
);
let failures = 0;
const first = Number(values["first-run"]);
for (let run = first; run < first + Number(values.runs); run++) if (!(await soak(run))) failures++;
process.exit(failures ? 1 : 0);
