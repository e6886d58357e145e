// Decode speed per serving weight format, svc against llama.cpp on the same
// weights in the same run (docs/serving-formats.md). For each shape of
// bench/shapes.mjs (random weights) and each format (fp32, bf16, int8, q4_0;
// llama.cpp's equivalents in bench/llama-cpp-formats.mjs):
//   - batch 1: greedy tokens/s after a 16-token prompt, svc's decoder step and
//     its Generator, llama.cpp one sequence; the ratio; and the fraction of
//     the bandwidth ceiling, weight bytes read per token × tokens/s over the
//     machine's read bandwidth (bench/read-bandwidth.c, measured just before
//     each repetition's batch-1 runs: on a shared VM it drifts by a third
//     within one run);
//   - 8 and 32 concurrent streams: aggregate tokens/s, prefill included (svc's
//     Generator, llama.cpp's parallel sequences in one context);
//   - time to first token of a 1,000-token prompt.
// Best of --reps for every figure (--stat median: their median); the load average is printed, since the
// machine is shared. PyTorch's decode (the previous peer) is in bench/engine.mjs.
//
//   npm run build && nice -n 10 node bench/decode.mjs [--shapes small,qwen] [--formats fp32,bf16,int8,q4_0]
//       [--tokens N] [--reps N] [--stat best|median] [--streams 1,8,32] [--prefill 1000] [--no-llama]
// SVC_KERNELS_ISA picks svc's kernels (e.g. avx512 against avx512vnni: fp32
// against 8-bit activations at int8 and q4_0 decode).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomModelWeights, writeTestTokenizer } from "@svc/engine/testing";
import { parseModelConfig } from "../packages/engine/dist/src/families/index.js";
import { BatchDecoder, createKvCache } from "../packages/engine/dist/src/generation/decode.js";
import { createGenerator } from "../packages/engine/dist/src/generation/generate.js";
import { argmax } from "../packages/engine/dist/src/generation/sampling.js";
import { decodeWeightBytes } from "../packages/engine/dist/src/graph/frozen-weights.js";
import { getKernels } from "../packages/engine/dist/src/kernels/index.js";
import { servingWeights } from "../packages/engine/dist/src/loading/serving-weights.js";
import { Rng } from "../packages/engine/dist/src/rng.js";
import { loadTokenizer } from "../packages/engine/dist/src/text/tokenizer.js";
import {
  ggufPath,
  llamaCppInstalled,
  llamaDecode,
  llamaPrefill,
  openLlamaCpp,
  writeFormatGguf,
} from "./llama-cpp-formats.mjs";
import { SHAPES } from "./shapes.mjs";

const PROMPT = 16;
const TOKENS = { tiny: 128, small: 48, qwen: 24 };

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const shapes = flag("shapes", "small,qwen").split(",");
const formats = flag("formats", "fp32,bf16,int8,q4_0").split(",");
const streamCounts = flag("streams", "1,8,32").split(",").map(Number);
const prefillTokens = Number(flag("prefill", "1000"));
const tokenOverride = flag("tokens", null);
const reps = Number(flag("reps", "3"));
const stat = flag("stat", "best");
if (stat !== "best" && stat !== "median") throw new Error(`--stat is best or median, not ${stat}`);
const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const llamaSkipped = process.argv.includes("--no-llama");
const withLlama = !llamaSkipped && llamaCppInstalled();
const kernels = getKernels();
const threads = kernels.threads ?? 1;

function randomPrompt(vocab, seed, length = PROMPT) {
  const rng = new Rng(seed);
  return Array.from({ length }, () => rng.int(vocab));
}

/**
 * The machine's read bandwidth in GB/s: read-bandwidth.c compiled once, each
 * call the best of 5 passes over 1 GiB with as many threads as the kernels use.
 */
function bandwidthMeter() {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-bw-"));
  const exe = join(dir, "read-bandwidth");
  const source = fileURLToPath(new URL("./read-bandwidth.c", import.meta.url));
  const cc = spawnSync("cc", ["-O2", "-march=native", "-pthread", "-o", exe, source], { encoding: "utf8" });
  if (cc.status !== 0) throw new Error(`cannot compile read-bandwidth.c: ${cc.stderr}`);
  return {
    measure: () => Number(spawnSync(exe, ["1024", String(threads), "5"], { encoding: "utf8" }).stdout.trim()),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** svc batch 1: greedy decode tokens/s on the BatchDecoder after a 16-token prefill. */
function svcStep(served, config, tokens) {
  const decoder = new BatchDecoder(served, config, PROMPT + tokens + 1);
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

/**
 * svc's Generator with `n` concurrent requests: completion tokens/s. One
 * request: between its first and last token (prefill excluded, as svcStep);
 * several: all tokens over the wall time, prefill included.
 */
async function svcStreams(generator, config, n, tokens) {
  const start = performance.now();
  let first = 0;
  const counts = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      let count = 0;
      const stream = generator.generate({
        promptIds: randomPrompt(config.vocabSize, 100 + i),
        temperature: 0,
        maxTokens: tokens + (n === 1 ? 1 : 0),
      });
      for await (const _chunk of stream) if (count++ === 0 && n === 1) first = performance.now();
      return count;
    }),
  );
  if (n === 1) return (counts[0] - 1) / ((performance.now() - first) / 1000);
  return counts.reduce((a, b) => a + b, 0) / ((performance.now() - start) / 1000);
}

/** svc's time to first token of a long prompt (the Generator prefills it in 256-token chunks). */
async function svcPrefill(generator, config, length) {
  const start = performance.now();
  for await (const _chunk of generator.generate({
    promptIds: randomPrompt(config.vocabSize, 7, length),
    temperature: 0,
    maxTokens: 1,
  })) {
    break;
  }
  return (performance.now() - start) / 1000;
}

const fmt = (x) => (x === null || x === undefined ? "—" : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : "—");
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");

console.log(
  `kernels: ${kernels.name} (${kernels.isa}), ${threads} threads; node ${process.version}; load average ${load()}; ${stat} of ${reps} repetitions`,
);
if (!withLlama)
  console.log(
    llamaSkipped
      ? "llama.cpp: skipped (--no-llama): svc only"
      : "llama.cpp: not installed (npm install --prefix bench/llama-cpp ...; bench/README.md): svc only",
  );
const meter = bandwidthMeter();
const bandwidth = meter.measure();
console.log(
  `read bandwidth: ${bandwidth.toFixed(1)} GB/s (read-bandwidth.c, ${threads} threads, 1 GiB, best of 5)`,
);

const tokDir = mkdtempSync(join(tmpdir(), "svc-bench-decode-"));
await writeTestTokenizer(tokDir);
const tokenizer = await loadTokenizer(tokDir);
const rows = [];

for (const name of shapes) {
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown shape ${name} (${Object.keys(SHAPES).join(", ")})`);
  const tokens = Number(tokenOverride ?? TOKENS[name] ?? 24);
  const config = parseModelConfig(shape.config);
  const weights = randomModelWeights(config, 1);
  const model = { dir: "<random>", weights, config, tokenizer, adapter: null };
  console.log(
    `\n${name}: ${shape.note}; hidden ${config.hiddenSize}, ${config.numHiddenLayers} layers, vocab ${config.vocabSize}; ${tokens} tokens after a ${PROMPT}-token prompt`,
  );
  for (const format of formats) {
    const served = servingWeights(weights, config, format);
    const bytes = decodeWeightBytes(served);
    const generator = createGenerator(model, { weightFormat: format, maxBatch: 32, maxContext: 2048 });
    svcStep(served, config, 4); // warm-up: JIT and first touch of the weights
    const row = { shape: name, format, bytes, svcStep: 0, svc: {}, llama: {}, svcTtft: 0, llamaTtft: 0 };
    let llama = null;
    if (withLlama) {
      const file = ggufPath(tokDir, format);
      writeFormatGguf(file, { format, config, raw: shape.config, weights, tokenizer, tokDir });
      row.llamaBytes = statSync(file).size;
      llama = { file, ...(await openLlamaCpp(file)) };
      await llamaDecode(llama.model, { prompts: [randomPrompt(config.vocabSize, 1)], tokens: 4, threads }); // warm-up
    }
    const samples = new Map(); // figure's object → key → every repetition's value
    const top = (obj, key, value) => {
      if (!samples.has(obj)) samples.set(obj, {});
      const list = samples.get(obj);
      list[key] = [...(list[key] ?? []), value];
      obj[key] = stat === "median" ? median(list[key]) : Math.max(...list[key]);
    };
    // svc and llama.cpp alternate within each repetition, so a burst of load hits both alike
    try {
      for (let rep = 0; rep < reps; rep++) {
        // the ceiling of this repetition's batch-1 runs: the bandwidth measured just before
        // them, since a shared machine's bandwidth drifts by a third within one run
        let bw = 0;
        for (const n of streamCounts) {
          if (n === 1) {
            bw = meter.measure();
            const step = svcStep(served, config, tokens);
            top(row, "bandwidth", bw);
            top(row, "svcStep", step);
            top(row, "svcCeiling", (bytes * step) / 1e9 / bw);
          }
          top(row.svc, n, await svcStreams(generator, config, n, tokens));
          if (llama) {
            const prompts = Array.from({ length: n }, (_, i) => randomPrompt(config.vocabSize, 100 + i));
            const rate = await llamaDecode(llama.model, { prompts, tokens, threads, includePrefill: n > 1 });
            top(row.llama, n, rate);
            if (n === 1) top(row, "llamaCeiling", (row.llamaBytes * rate) / 1e9 / bw);
          }
        }
        if (prefillTokens) {
          top(row, "svcTtft", 1 / (await svcPrefill(generator, config, prefillTokens)));
          if (llama) {
            const prompt = randomPrompt(config.vocabSize, 7, prefillTokens);
            top(row, "llamaTtft", 1 / (await llamaPrefill(llama.model, prompt, threads)));
          }
        }
      }
    } finally {
      if (llama) {
        await llama.close();
        rmSync(llama.file, { force: true });
      }
    }
    rows.push(row);
    const ceiling = (fraction) => (fraction ? `${(100 * fraction).toFixed(0)}%` : "—");
    const streams = streamCounts
      .filter((n) => n > 1)
      .map(
        (n) => `${n} streams ${fmt(row.svc[n])} vs ${fmt(row.llama[n])} (${ratio(row.svc[n], row.llama[n])})`,
      )
      .join("; ");
    console.log(
      `  ${format.padEnd(5)} ${(bytes / 2 ** 20).toFixed(0).padStart(5)} MiB read/token, read bandwidth ${fmt(row.bandwidth)} GB/s | batch 1: svc step ${fmt(row.svcStep)} (${ceiling(row.svcCeiling)} of ceiling), Generator ${fmt(row.svc[1])}, llama.cpp ${fmt(row.llama[1])}${row.llamaBytes ? ` (${ceiling(row.llamaCeiling)})` : ""}, ratio ${ratio(row.svcStep, row.llama[1])} (Generator ${ratio(row.svc[1], row.llama[1])}) | ${streams} | TTFT ${prefillTokens}: svc ${row.svcTtft ? (1 / row.svcTtft).toFixed(2) : "—"} s, llama.cpp ${row.llamaTtft ? (1 / row.llamaTtft).toFixed(2) : "—"} s`,
    );
  }
}
rmSync(tokDir, { recursive: true, force: true });
console.log(`\nload average at the end ${load()}; read bandwidth again ${meter.measure().toFixed(1)} GB/s`);
meter.close();
console.log(JSON.stringify({ bandwidth, rows }));
