// Decode speed: tokens/s at batch 1 with a KV cache, ours against PyTorch in
// the same run (bench/reference_torch.py with "steps": 0, 2 threads,
// inference_mode: the same family block, decoded like transformers' eager
// modules with a growing cache), for the shapes of bench/shapes.mjs on random
// weights; then the aggregate tokens/s of our Generator with 8 and 32
// concurrent requests.
//
// Each measurement is repeated (--reps, default 3) and the best run is
// reported for both engines, which damps the noise of a shared machine; the
// load average is printed so a reader can judge the conditions.
//
// PyTorch runs with as many threads as our kernels use (2 here; SVC_THREADS=1
// compares single-threaded, which suffers less when other work shares the cores).
//
//   npm run build && nice -n 10 node bench/decode.mjs [--shapes tiny,small,qwen,gemma] [--tokens N] [--reps N] [--no-torch]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BatchDecoder, createKvCache } from "../packages/engine/dist/src/decode.js";
import { parseModelConfig } from "../packages/engine/dist/src/families/index.js";
import { createGenerator } from "../packages/engine/dist/src/generate.js";
import { getKernels } from "../packages/engine/dist/src/kernels/index.js";
import { Rng } from "../packages/engine/dist/src/rng.js";
import { argmax } from "../packages/engine/dist/src/sampling.js";
import { randomModelWeights } from "../packages/engine/dist/src/testing/random-weights.js";
import { writeTestTokenizer } from "../packages/engine/dist/src/testing/test-tokenizer.js";
import { loadTokenizer } from "../packages/engine/dist/src/tokenizer.js";
import { SHAPES } from "./shapes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
/** Decoded tokens per measurement, by shape (the rest: 32). */
const TOKENS = { tiny: 256, small: 64 };
const PROMPT = 16;

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const shapes = flag("shapes", "tiny,small").split(",");
const tokenOverride = flag("tokens", null);
const reps = Number(flag("reps", "3"));
const withTorch = !process.argv.includes("--no-torch");

function randomPrompt(vocab, seed) {
  const rng = new Rng(seed);
  return Array.from({ length: PROMPT }, () => rng.int(vocab));
}

/** Batch-1 greedy decode straight on the BatchDecoder: decode tokens/s after a 16-token prefill. */
function decodeAlone(weights, config, tokens) {
  const decoder = new BatchDecoder(weights, config, PROMPT + tokens + 1);
  const cache = createKvCache(config, PROMPT + tokens + 1);
  const next = new Int32Array(1);
  let logits = decoder.step([
    { cache, tokenIds: randomPrompt(config.vocabSize, 1), lora: null, wantLogits: true },
  ]);
  next[0] = argmax(logits, config.vocabSize);
  const start = performance.now();
  for (let i = 0; i < tokens; i++) {
    logits = decoder.step([{ cache, tokenIds: next, lora: null, wantLogits: true }]);
    next[0] = argmax(logits, config.vocabSize);
  }
  return tokens / ((performance.now() - start) / 1000);
}

/** Streams one request through the Generator: tokens/s between the first and the last chunk. */
async function generatorAlone(generator, config, tokens) {
  let first = 0;
  let count = 0;
  const stream = generator.generate({
    promptIds: randomPrompt(config.vocabSize, 2),
    temperature: 0,
    maxTokens: tokens + 1,
  });
  for await (const _chunk of stream) {
    if (count++ === 0) first = performance.now();
  }
  return (count - 1) / ((performance.now() - first) / 1000);
}

/** N concurrent requests: all completion tokens over the wall time (prefill included). */
async function generatorConcurrent(generator, config, n, tokens) {
  const start = performance.now();
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      generator.complete({
        promptIds: randomPrompt(config.vocabSize, 100 + i),
        temperature: 0,
        maxTokens: tokens,
      }),
    ),
  );
  const total = results.reduce((sum, r) => sum + r.completionTokens, 0);
  return total / ((performance.now() - start) / 1000);
}

function torchDecode(shape, tokens) {
  const args = JSON.stringify({
    config: shape.config,
    batch: 1,
    seq: PROMPT,
    steps: 0,
    prompt: PROMPT,
    decode_tokens: tokens,
    reps,
    threads: kernels.threads ?? 2,
  });
  const r = spawnSync("/usr/bin/python3", [join(here, "reference_torch.py"), args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`reference_torch.py failed:\n${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split("\n").pop());
  return { tokensPerSecond: Math.max(...out.decode_runs), peakMiB: out.peak_rss_mb };
}

async function best(measure) {
  let top = 0;
  for (let i = 0; i < reps; i++) top = Math.max(top, await measure());
  return top;
}

const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const kernels = getKernels();
const load = () => loadavg()[0].toFixed(1);
console.log(
  `kernels: ${kernels.name} (${kernels.isa}), ${kernels.threads ?? 1} threads; node ${process.version}; load average ${load()}`,
);
const tokDir = mkdtempSync(join(tmpdir(), "svc-bench-decode-"));
await writeTestTokenizer(tokDir);
const tokenizer = await loadTokenizer(tokDir);
rmSync(tokDir, { recursive: true, force: true });

for (const name of shapes) {
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown shape ${name} (${Object.keys(SHAPES).join(", ")})`);
  const tokens = Number(tokenOverride ?? TOKENS[name] ?? 32);
  const config = parseModelConfig(shape.config);
  const weights = randomModelWeights(config, 1);
  const model = { dir: "<random>", weights, config, tokenizer, adapter: null };

  const generator = createGenerator(model, { maxBatch: 32, maxContext: 2048 });
  decodeAlone(weights, config, 8); // warm-up: JIT and first-touch of the weights
  await generatorAlone(generator, config, 8);
  const ours = await best(() => decodeAlone(weights, config, tokens));
  const oursGen = await best(() => generatorAlone(generator, config, tokens));
  const torch = withTorch ? torchDecode(shape, tokens) : null;
  const concurrentTokens = Math.max(16, Math.round(tokens / 2));
  const agg8 = await generatorConcurrent(generator, config, 8, concurrentTokens);
  const agg32 = await generatorConcurrent(generator, config, 32, concurrentTokens);

  console.log(
    `\n${name}: ${shape.note}; hidden ${config.hiddenSize}, ${config.numHiddenLayers} layers, ${config.numAttentionHeads}/${config.numKeyValueHeads} heads of ${config.headDim}, vocab ${config.vocabSize}`,
  );
  console.log(`  batch 1, ${tokens} tokens after a ${PROMPT}-token prompt:`);
  console.log(`    ours (decoder step)   ${fmt(ours)} tokens/s`);
  console.log(`    ours (Generator)      ${fmt(oursGen)} tokens/s`);
  if (torch) {
    const t = torch.tokensPerSecond;
    console.log(`    PyTorch               ${fmt(t)} tokens/s (peak RSS ${torch.peakMiB.toFixed(0)} MiB)`);
    console.log(
      `    ratio ours/PyTorch    ${(ours / t).toFixed(2)}x (Generator: ${(oursGen / t).toFixed(2)}x)`,
    );
  }
  console.log(`  Generator aggregate, ${concurrentTokens} tokens per request:`);
  console.log(`    8 concurrent          ${fmt(agg8)} tokens/s`);
  console.log(`    32 concurrent         ${fmt(agg32)} tokens/s`);
}
const peakMiB = process.resourceUsage().maxRSS / 1024;
console.log(`\npeak RSS of this process (all shapes): ${peakMiB.toFixed(0)} MiB; load average ${load()}`);
