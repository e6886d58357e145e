// Hostile soak: 200 concurrent chat streams at the edge for several minutes,
// with hostile requests mixed in (1 MB prompts, NUL bytes, bad UTF-8, huge
// numbers, private dataset URLs, wrong keys, oversized max_tokens). Reports
// the streams' latency (p50/p99 to the first chunk and to [DONE]), errors
// among the well-formed streams, what the hostile requests got (any 5xx or
// an unexpected status is an error), the slowest /healthz seen meanwhile, and
// the peak RSS of the server and its inference process.
//
//   npm run build && nice node bench/hostile-soak.mjs [--streams 200] [--hostile 10] [--seconds 180]
import { parseArgs } from "node:util";
import { api, identity, startServer, tinyModel, watchMemory } from "./serve-harness.mjs";

const { values } = parseArgs({
  options: {
    streams: { type: "string", default: "200" },
    hostile: { type: "string", default: "10" },
    seconds: { type: "string", default: "180" },
    "max-tokens": { type: "string", default: "16" },
  },
});
const seconds = Number(values.seconds);
const model = await tinyModel({ hiddenSize: 32, intermediateSize: 64, numHiddenLayers: 2 });
const server = await startServer(model);
process.on("exit", () => server.kill());
const memory = watchMemory(server.pid);
const who = await identity(server.apiUrl);
const { deployment } = await api(server.apiUrl, "POST", `/v1/endpoints?${who.scope}`, {
  token: who.token,
  json: { slug: `hostile-${process.pid}`, target: { kind: "base_model", baseModel: "bench/tiny" } },
});
const { key } = await api(server.apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
  token: who.token,
  json: { label: "soak" },
});
const chatUrl = `${server.edgeUrl}/d/${deployment.slug}/v1/chat/completions`;
const auth = { authorization: `Bearer ${key.plaintext}` };
const deadline = Date.now() + seconds * 1000;

// ---------------------------------------------------------------- well-formed streams

const firstChunkMs = [];
const doneMs = [];
const streamErrors = new Map();
const countError = (map, what) => map.set(what, (map.get(what) ?? 0) + 1);

async function stream(i) {
  const started = performance.now();
  const response = await fetch(chatUrl, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({
      model: "x",
      stream: true,
      max_tokens: Number(values["max-tokens"]),
      messages: [{ role: "user", content: `Stream number ${i}, say something.` }],
    }),
  });
  if (response.status !== 200) {
    countError(streamErrors, `HTTP ${response.status}`);
    await response.text();
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let first = true;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (first) {
      firstChunkMs.push(performance.now() - started);
      first = false;
    }
    text += decoder.decode(value, { stream: true });
  }
  if (!text.includes("data: [DONE]")) countError(streamErrors, "stream ended without [DONE]");
  else if (text.includes('"error"')) countError(streamErrors, "error chunk");
  else doneMs.push(performance.now() - started);
}

async function streamLoop(i) {
  while (Date.now() < deadline) {
    try {
      await stream(i);
    } catch (error) {
      countError(streamErrors, error.cause?.code ?? error.message);
    }
  }
}

// ---------------------------------------------------------------- hostile requests

const big = (letter) => Array.from({ length: 5 }, () => ({ role: "user", content: letter.repeat(190_000) }));
const json = (body) => ({
  headers: { ...auth, "content-type": "application/json" },
  body: JSON.stringify(body),
});
/** Each: a request and the status it must get. */
const HOSTILE = [
  ["1 MB prompt", () => [chatUrl, json({ messages: big("a") })], 400],
  [
    "10k messages",
    () => [chatUrl, json({ messages: Array(10_000).fill({ role: "user", content: "x" }) })],
    400,
  ],
  ["NUL in the slug", () => [`${server.edgeUrl}/d/%00/v1/chat/completions`, json({ messages: [] })], 400],
  // Message content is never stored: NUL in it is answered (names, keys and paths refuse it).
  [
    "NUL in a message (answered)",
    () => [chatUrl, json({ messages: [{ role: "user", content: "a\u0000b" }], max_tokens: 2 })],
    200,
  ],
  [
    "bad UTF-8 body",
    () => [
      chatUrl,
      {
        headers: { ...auth, "content-type": "application/json" },
        body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      },
    ],
    400,
  ],
  ["seed 1e308", () => [chatUrl, json({ messages: [{ role: "user", content: "hi" }], seed: 1e308 })], 400],
  [
    "max_tokens past the context",
    () => [chatUrl, json({ messages: [{ role: "user", content: "hi" }], max_tokens: 8192 })],
    400,
  ],
  [
    "wrong key",
    () => [
      chatUrl,
      { headers: { authorization: "Bearer svc-not-a-key", "content-type": "application/json" }, body: "{}" },
    ],
    401,
  ],
  [
    "dataset URL at the metadata address",
    () => [
      `${server.apiUrl}/v1/datasets?${who.scope}`,
      {
        headers: { authorization: `Bearer ${who.token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: "http://169.254.169.254/latest/meta-data/", name: "x.jsonl" }),
      },
    ],
    400,
  ],
  [
    "dataset URL on loopback",
    () => [
      `${server.apiUrl}/v1/datasets?${who.scope}`,
      {
        headers: { authorization: `Bearer ${who.token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: `${server.apiUrl}/healthz`, name: "x.jsonl" }),
      },
    ],
    400,
  ],
  [
    "job with maxSteps 1e12",
    () => [
      `${server.apiUrl}/v1/jobs?${who.scope}`,
      {
        headers: { authorization: `Bearer ${who.token}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: "x",
          baseModel: "bench/tiny",
          datasetId: "00000000-0000-0000-0000-000000000000",
          hyperparameters: { maxSteps: 1e12 },
        }),
      },
    ],
    400,
  ],
];
const hostileSeen = new Map(); // "name -> status" -> count
const hostileErrors = new Map();

async function hostileLoop(i) {
  for (let n = i; Date.now() < deadline; n++) {
    const [name, make, expected] = HOSTILE[n % HOSTILE.length];
    const [url, init] = make();
    try {
      const response = await fetch(url, { method: "POST", ...init });
      await response.arrayBuffer();
      countError(hostileSeen, `${name} -> ${response.status}`);
      if (response.status !== expected)
        countError(hostileErrors, `${name}: ${response.status}, expected ${expected}`);
    } catch (error) {
      countError(hostileErrors, `${name}: ${error.cause?.code ?? error.message}`);
    }
  }
}

// ---------------------------------------------------------------- health

let slowestHealthMs = 0;
const health = (async () => {
  while (Date.now() < deadline) {
    const started = performance.now();
    await fetch(`${server.apiUrl}/healthz`).then((r) => r.text());
    slowestHealthMs = Math.max(slowestHealthMs, performance.now() - started);
    await new Promise((r) => setTimeout(r, 1000));
  }
})();

console.log(
  `hostile soak: ${values.streams} streams (max_tokens ${values["max-tokens"]}) + ${values.hostile} hostile loops for ${seconds} s`,
);
await Promise.all([
  ...Array.from({ length: Number(values.streams) }, (_, i) => streamLoop(i)),
  ...Array.from({ length: Number(values.hostile) }, (_, i) => hostileLoop(i)),
  health,
]);
const peaks = memory.stop();
await server.stop();

const pct = (list, p) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))].toFixed(0)
    : "n/a";
};
const mb = (kb) => (kb ? `${(kb / 1024).toFixed(0)} MB` : "n/a");
const errorCount = [...streamErrors.values()].reduce((a, b) => a + b, 0);
const hostileCount = [...hostileSeen.values()].reduce((a, b) => a + b, 0);
const hostileBad = [...hostileErrors.values()].reduce((a, b) => a + b, 0);
console.log(
  `streams completed: ${doneMs.length} (${(doneMs.length / seconds).toFixed(1)}/s), errors: ${errorCount}`,
);
for (const [what, n] of streamErrors) console.log(`  stream error: ${what} x${n}`);
console.log(`first chunk: p50 ${pct(firstChunkMs, 50)} ms, p99 ${pct(firstChunkMs, 99)} ms`);
console.log(`whole stream: p50 ${pct(doneMs, 50)} ms, p99 ${pct(doneMs, 99)} ms`);
console.log(`hostile requests: ${hostileCount}, unexpected answers: ${hostileBad}`);
for (const [what, n] of hostileSeen) console.log(`  ${what} x${n}`);
for (const [what, n] of hostileErrors) console.log(`  UNEXPECTED ${what} x${n}`);
console.log(`slowest /healthz: ${slowestHealthMs.toFixed(0)} ms`);
console.log(`peak RSS: server ${mb(peaks.server)}, inference process ${mb(peaks.inference)}`);
process.exit(errorCount + hostileBad > 0 ? 1 : 0);
