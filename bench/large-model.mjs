#!/usr/bin/env node
// LoRA training of a large model on this machine: by default Qwen2.5-1.5B's
// shape (bench/shapes.mjs "qwen-1.5b": hidden 1536, 28 layers, 12 heads / 2 KV
// heads of 128, ffn 8960, vocab 151936, tied, q/k/v biases; also "qwen-3b",
// "qwen-7b") with random weights, LoRA on every linear layer, AdamW with
// gradient clipping, on random tokens with every position labelled; then
// greedy decode at batch 1.
//
//   npm run build && nice node bench/large-model.mjs [--shape qwen-1.5b] [--steps 3]
//       [--batch 1] [--seq 256] [--r 16] [--decode-tokens 16]
//       [--precision fp32|bf16] [--base-weights int8]
//
// --precision and --base-weights are the engine's train() settings
// (docs/training-precision.md): the base weights are built layer by layer in
// the run's format (train-precision.mjs's randomTrainingWeights), so the
// process never holds the fp32 model and its peak RSS is the run's own.
// The 8 GiB question (issue 38): `--batch 1 --seq 512 --steps 1
// --decode-tokens 0`; the first step's backward is the peak.
//
// Prints the time to build the weights, every training step's time, the
// median step, tokens/s, effective GFLOP/s (bench/shapes.mjs counts the
// FLOPs), decode tokens/s, the peak RSS after training (VmHWM, in GiB) with
// "fits in 8 GiB: yes/no", and the process's peak RSS at the end.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { writeTestTokenizer } from "@svc/engine/testing";
import {
  initLoraAdapter,
  loraLayersOf,
  loraParams,
  zerosLike,
} from "../packages/engine/dist/src/adapters/lora.js";
import { makeBatch } from "../packages/engine/dist/src/data/batching.js";
import { parameterCount, parseModelConfig } from "../packages/engine/dist/src/families/index.js";
import { createGenerator } from "../packages/engine/dist/src/generation/generate.js";
import { ModelGraph } from "../packages/engine/dist/src/graph/model.js";
import { getKernels } from "../packages/engine/dist/src/kernels/index.js";
import { Rng } from "../packages/engine/dist/src/rng.js";
import { loadTokenizer } from "../packages/engine/dist/src/text/tokenizer.js";
import { AdamW, clipGradNorm } from "../packages/engine/dist/src/training/optim.js";
import { SHAPES, trainStepFlops } from "./shapes.mjs";
import { randomTrainingWeights } from "./train-precision.mjs";

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const shapeName = option("shape", "qwen-1.5b");
const shape = SHAPES[shapeName];
if (!shape) throw new Error(`unknown shape ${shapeName} (${Object.keys(SHAPES).join(", ")})`);
const steps = Number(option("steps", "3"));
const B = Number(option("batch", String(shape.batch)));
const T = Number(option("seq", String(shape.seq)));
const r = Number(option("r", "16"));
const decodeTokens = Number(option("decode-tokens", "16"));
const precision = option("precision", "fp32");
const baseWeights = option("base-weights", undefined);
const rssMb = () => process.resourceUsage().maxRSS / 1024;
/** The process's peak resident set (VmHWM, Linux), in GiB; maxRSS where /proc is absent. */
const peakRssGiB = () => {
  try {
    const kb = readFileSync("/proc/self/status", "utf8").match(/^VmHWM:\s+(\d+) kB/m);
    if (kb) return Number(kb[1]) / 2 ** 20;
  } catch {}
  return process.resourceUsage().maxRSS / 2 ** 20;
};
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const config = parseModelConfig(shape.config);
const params = parameterCount(config);
const kern = getKernels();
console.log(
  `${shapeName}: ${shape.note}; ${(params / 1e9).toFixed(3)}B parameters (${((params * 4) / 2 ** 30).toFixed(2)} GiB fp32); batch ${B} x seq ${T}; LoRA r ${r} all-linear; kernels ${kern.name}/${kern.isa}; load average ${load()}`,
);

const dist = join(import.meta.dirname, "..", "packages", "engine", "dist", "src");
let t0 = performance.now();
const { weights, resolved } = await randomTrainingWeights(dist, config, precision, kern, baseWeights);
console.log(
  `random weights (${resolved.precision}, base ${resolved.baseWeights}): ${((performance.now() - t0) / 1000).toFixed(1)} s; peak RSS ${rssMb().toFixed(0)} MB`,
);

const adapter = initLoraAdapter(config, { r, alpha: 2 * r, targetModules: ["all-linear"] }, 1);
const gradAdapter = zerosLike(adapter);
const lora = loraLayersOf(adapter, config);
const grads = loraLayersOf(gradAdapter, config);
const loraList = loraParams(adapter);
const gradList = loraParams(gradAdapter);
const loraCount = loraList.reduce((n, p) => n + p.length, 0);
const optimizer = new AdamW(loraList, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
const { graphPrecision } = await import(join(dist, "training", "train-precision.js"));
const graph = new ModelGraph(config, weights, { skipUnlabeledRows: false, ...graphPrecision(resolved) });
const rng = new Rng(0);
const examples = Array.from({ length: B }, () => {
  const ids = Int32Array.from({ length: T }, () => rng.int(config.vocabSize));
  return { inputIds: ids, labels: ids };
});
const batch = makeBatch(examples, 0);
let count = 0;
for (const t of batch.targets) if (t >= 0) count++;

const stepTimes = [];
for (let s = 0; s <= steps; s++) {
  t0 = performance.now();
  const { lossSum } = graph.forward(batch, lora, 1 / count);
  graph.backward(lora, grads);
  const norm = clipGradNorm(gradList, 1.0);
  optimizer.update(gradList, 1e-4);
  for (const g of gradList) g.fill(0);
  const seconds = (performance.now() - t0) / 1000;
  if (s > 0) stepTimes.push(seconds);
  console.log(
    `step ${s}${s === 0 ? " (warm-up)" : ""}: ${seconds.toFixed(2)} s, loss ${(lossSum / count).toFixed(4)}, grad norm ${norm.toFixed(4)}; peak RSS ${rssMb().toFixed(0)} MB; load ${load()}`,
  );
}
const stepS = median(stepTimes);
const flops = trainStepFlops(config, B, T, r);
const trainRss = rssMb();
const trainHwm = peakRssGiB();

const tokDir = mkdtempSync(join(tmpdir(), "svc-bench-tok-"));
await writeTestTokenizer(tokDir);
const tokenizer = await loadTokenizer(tokDir);
rmSync(tokDir, { recursive: true, force: true });
let decodeRate = null;
if (decodeTokens > 0) {
  const generator = createGenerator(
    { dir: "<random>", config, weights, tokenizer, adapter: null },
    { maxContext: 16 + decodeTokens + 2 },
  );
  const stamps = [];
  const prompt = Array.from(examples[0].inputIds.subarray(0, 16));
  for await (const _ of generator.generate({
    promptIds: prompt,
    maxTokens: decodeTokens + 1,
    temperature: 0,
  })) {
    stamps.push(performance.now());
  }
  decodeRate = (stamps.length - 1) / ((stamps[stamps.length - 1] - stamps[0]) / 1000);
}

console.log(
  `\n${shapeName}, ${(params / 1e9).toFixed(3)}B parameters, LoRA ${(loraCount / 1e6).toFixed(2)}M parameters`,
);
console.log(
  `training step (median of ${steps}): ${stepS.toFixed(2)} s; ${((B * T) / stepS).toFixed(1)} tokens/s`,
);
console.log(
  `training FLOPs: ${(flops.total / 1e9).toFixed(0)} GFLOP per step; effective ${(flops.total / stepS / 1e9).toFixed(1)} GFLOP/s`,
);
if (decodeRate !== null)
  console.log(`decode (batch 1, ${decodeTokens} tokens): ${decodeRate.toFixed(2)} tokens/s`);
console.log(
  `peak RSS after training (VmHWM): ${trainHwm.toFixed(2)} GiB in ${resolved.precision} on a ${resolved.baseWeights} base, batch ${B} x ${T}; fits in 8 GiB: ${trainHwm <= 8 ? "yes" : "no"}`,
);
console.log(
  `peak RSS: ${trainRss.toFixed(0)} MB after training, ${rssMb().toFixed(0)} MB at the end; load average ${load()}`,
);
