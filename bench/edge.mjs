// Edge overhead: latency of POST /v1/chat/completions through the edge
// (deployment lookup, key check, validation, OpenAI formatting) against a bare
// HTTP server that calls the engine's Generator directly, both driven by wrk
// with 200 concurrent connections on a tiny model with max_tokens 4.
//
// Direct and edge runs alternate (--rounds of each) so background load hits
// both alike; the figures are the means over rounds.
//
//   npm run build && nice -n 10 node bench/edge.mjs [--seconds 15] [--connections 200] [--max-tokens 4] [--rounds 2]
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { api, identity, startServer, tinyModel } from "./serve-harness.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "15" },
    connections: { type: "string", default: "200" },
    "max-tokens": { type: "string", default: "4" },
    rounds: { type: "string", default: "2" },
    "direct-server": { type: "string" },
  },
});

const body = (maxTokens) =>
  JSON.stringify({
    model: "bench",
    messages: [{ role: "user", content: "Say hello." }],
    max_tokens: maxTokens,
    temperature: 0,
  });

// Child mode: the baseline server, the engine called directly behind node:http.
if (values["direct-server"]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const { createGenerator, loadModel } = await import(join(root, "packages/engine/dist/src/index.js"));
  const generator = createGenerator(await loadModel(values["direct-server"]));
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => {
      text += c;
    });
    req.on("end", async () => {
      const request = JSON.parse(text);
      const result = await generator.complete({
        messages: request.messages,
        maxTokens: request.max_tokens,
        temperature: request.temperature,
      });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: result.text } }] }));
    });
  });
  server.listen(0, "127.0.0.1", () => console.log(`direct-ready ${server.address().port}`));
  await new Promise(() => {});
}

function wrk(url, headers, seconds, connections, payload) {
  const script = join(mkdtempSync(join(tmpdir(), "svc-wrk-")), "post.lua");
  const lines = [
    `wrk.method = "POST"`,
    `wrk.body = ${JSON.stringify(payload)}`,
    `wrk.headers["Content-Type"] = "application/json"`,
  ];
  for (const [k, v] of Object.entries(headers))
    lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  writeFileSync(script, `${lines.join("\n")}\n`);
  const out = execFileSync(
    "wrk",
    [
      "-t",
      String(Math.min(2, connections)),
      "-c",
      String(connections),
      "-d",
      `${seconds}s`,
      "--timeout",
      "30s",
      "--latency",
      "-s",
      script,
      url,
    ],
    { encoding: "utf8" },
  );
  const ms = (label) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(out);
    if (!m) throw new Error(`no ${label}% latency in wrk output:\n${out}`);
    return Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2]];
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(out)?.[1] ?? "none";
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
  return { p50: ms("50"), p99: ms("99"), rps, non2xx, errors };
}

const seconds = Number(values.seconds);
const connections = Number(values.connections);
const maxTokens = Number(values["max-tokens"]);
const modelDir = await tinyModel();
const payload = body(maxTokens);

// Baseline: the engine behind a bare HTTP server, in its own process like the edge.
const direct = spawn(process.execPath, [fileURLToPath(import.meta.url), "--direct-server", modelDir], {
  stdio: ["ignore", "pipe", "inherit"],
});
const directPort = await new Promise((resolve) => {
  let out = "";
  direct.stdout.on("data", (c) => {
    out += c;
    const m = /direct-ready (\d+)/.exec(out);
    if (m) resolve(Number(m[1]));
  });
});
const directUrl = `http://127.0.0.1:${directPort}/`;

const server = await startServer(modelDir);
process.on("exit", () => {
  direct.kill("SIGTERM");
  server.kill();
});
const who = await identity(server.apiUrl);
const { deployment } = await api(server.apiUrl, "POST", `/v1/endpoints?${who.scope}`, {
  token: who.token,
  json: { slug: "bench-edge", target: { kind: "base_model", baseModel: "bench/tiny" } },
});
const { key } = await api(server.apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
  token: who.token,
  json: { label: "bench" },
});
const edgeUrl = `${server.edgeUrl}/d/${deployment.slug}/v1/chat/completions`;

// Warm both (model load, JIT) before measuring.
console.error("warming up…");
for (const [url, headers] of [
  [directUrl, {}],
  [edgeUrl, { Authorization: `Bearer ${key.plaintext}` }],
]) {
  wrk(url, headers, 3, 20, payload);
}

console.log(
  `edge overhead: ${connections} connections, ${seconds}s per run, ${values.rounds} runs each, max_tokens ${maxTokens}, tiny random model`,
);
const runs = { direct: [], edge: [] };
for (let round = 0; round < Number(values.rounds); round++) {
  runs.direct.push(wrk(directUrl, {}, seconds, connections, payload));
  runs.edge.push(wrk(edgeUrl, { Authorization: `Bearer ${key.plaintext}` }, seconds, connections, payload));
}
const mean = (list, k) => list.reduce((s, r) => s + r[k], 0) / list.length;
const summary = (list) => ({
  p50: mean(list, "p50"),
  p99: mean(list, "p99"),
  rps: mean(list, "rps"),
  non2xx: list.reduce((s, r) => s + r.non2xx, 0),
  errors: list.map((r) => r.errors).join(" / "),
});
const base = summary(runs.direct);
const edge = summary(runs.edge);
const row = (name, r) =>
  console.log(
    `  ${name.padEnd(8)} p50 ${r.p50.toFixed(2).padStart(9)} ms   p99 ${r.p99.toFixed(2).padStart(9)} ms   ${r.rps.toFixed(0).padStart(6)} req/s   non-2xx ${r.non2xx}   socket errors ${r.errors}`,
  );
row("direct", base);
row("edge", edge);
console.log(
  `  edge/direct ratio: p50 ${(edge.p50 / base.p50).toFixed(2)}x  p99 ${(edge.p99 / base.p99).toFixed(2)}x  throughput ${(edge.rps / base.rps).toFixed(2)}x`,
);
console.log(
  `  edge adds: p50 ${(edge.p50 - base.p50).toFixed(2)} ms  p99 ${(edge.p99 - base.p99).toFixed(2)} ms`,
);

direct.kill("SIGTERM");
await server.stop();
