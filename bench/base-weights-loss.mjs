#!/usr/bin/env node
// The loss of LoRA training on a bf16 or int8 frozen base against fp32, on a
// benchmark shape (issue 38: "the loss difference against fp32 on ... one
// benchmark shape"). Four runs (fp32, bf16, an int8 base in fp32 and in bf16) from the same start: the same random weights
// (train-precision.mjs's randomTrainingWeights, seeded per layer, converted to
// the run's format as each layer is made), the same LoRA init, the same
// seeded random token batches (every position labelled), AdamW with gradient
// clipping; each run in its own child process, so its peak RSS is its own.
//
//   npm run build && nice node bench/base-weights-loss.mjs [--shape small] [--steps 10]
//       [--batch 4] [--seq 256] [--r 16] [--lr 2e-4]
//
// Prints each step's loss per run, the largest |loss − fp32| of each other
// run (and at which step), and each run's peak RSS (VmHWM) and time.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SHAPES } from "./shapes.mjs";
import { randomTrainingWeights } from "./train-precision.mjs";

const dist = join(import.meta.dirname, "..", "packages", "engine", "dist", "src");
function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
/** A positive integer option, refused by name otherwise. */
function count(name, fallback) {
  const v = Number(option(name, fallback));
  if (!Number.isSafeInteger(v) || v < 1)
    throw new Error(`--${name} must be a positive integer, got ${option(name)}`);
  return v;
}

const shapeName = option("shape", "small");
const shape = SHAPES[shapeName];
if (!shape) throw new Error(`--shape: unknown shape ${shapeName} (${Object.keys(SHAPES).join(", ")})`);
const steps = count("steps", "10");
const B = count("batch", "4");
const T = count("seq", "256");
const r = count("r", "16");
const lr = Number(option("lr", "2e-4"));
if (!(lr > 0)) throw new Error(`--lr must be a positive number, got ${option("lr")}`);
/** run name → the engine's train() settings. */
const RUNS = {
  fp32: { precision: "fp32", baseWeights: undefined },
  bf16: { precision: "bf16", baseWeights: undefined },
  int8: { precision: "fp32", baseWeights: "int8" },
  "int8-bf16": { precision: "bf16", baseWeights: "int8" },
};

function peakRssGiB() {
  const kb = readFileSync("/proc/self/status", "utf8").match(/^VmHWM:\s+(\d+) kB/m);
  return kb ? Number(kb[1]) / 2 ** 20 : process.resourceUsage().maxRSS / 2 ** 20;
}

async function worker(run) {
  const { parseModelConfig } = await import(join(dist, "families", "index.js"));
  const { ModelGraph } = await import(join(dist, "graph", "model.js"));
  const { initLoraAdapter, loraLayersOf, loraParams, zerosLike } = await import(
    join(dist, "adapters", "lora.js")
  );
  const { AdamW, clipGradNorm } = await import(join(dist, "training", "optim.js"));
  const { makeBatch } = await import(join(dist, "data", "batching.js"));
  const { getKernels } = await import(join(dist, "kernels", "index.js"));
  const { Rng } = await import(join(dist, "rng.js"));
  const config = parseModelConfig(shape.config);
  const kern = getKernels();
  const { precision, baseWeights } = RUNS[run];
  const { weights, resolved } = await randomTrainingWeights(dist, config, precision, kern, baseWeights);
  const adapter = initLoraAdapter(config, { r, alpha: 2 * r, targetModules: ["all-linear"] }, 1);
  const gradAdapter = zerosLike(adapter);
  const lora = loraLayersOf(adapter, config);
  const grads = loraLayersOf(gradAdapter, config);
  const gradList = loraParams(gradAdapter);
  const optimizer = new AdamW(loraParams(adapter), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
  const { graphPrecision } = await import(join(dist, "training", "train-precision.js"));
  const graph = new ModelGraph(config, weights, { skipUnlabeledRows: false, ...graphPrecision(resolved) });
  const rng = new Rng(0);
  const losses = [];
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) {
    const examples = Array.from({ length: B }, () => {
      const ids = Int32Array.from({ length: T }, () => rng.int(config.vocabSize));
      return { inputIds: ids, labels: ids };
    });
    const batch = makeBatch(examples, 0);
    let n = 0;
    for (const t of batch.targets) if (t >= 0) n++;
    const { lossSum } = graph.forward(batch, lora, 1 / n);
    graph.backward(lora, grads);
    clipGradNorm(gradList, 1.0);
    optimizer.update(gradList, lr);
    for (const g of gradList) g.fill(0);
    losses.push(lossSum / n);
  }
  return {
    run,
    resolved,
    kernels: `${kern.name}/${kern.isa}`,
    losses,
    seconds: (performance.now() - t0) / 1000,
    peakRssGiB: peakRssGiB(),
  };
}

const workerRun = option("worker");
if (workerRun) {
  if (!RUNS[workerRun]) throw new Error(`--worker must be one of ${Object.keys(RUNS).join(", ")}`);
  console.log(JSON.stringify(await worker(workerRun)));
} else {
  console.log(
    `${shapeName} (${shape.note}), random weights; ${steps} steps of ${B} x ${T} random tokens; LoRA r ${r} all-linear, lr ${lr}`,
  );
  const results = {};
  for (const run of Object.keys(RUNS)) {
    const args = [...process.argv.slice(1), "--worker", run];
    const child = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 26 });
    if (child.status !== 0) throw new Error(`the ${run} run failed:\n${child.stderr}`);
    results[run] = JSON.parse(child.stdout.trim().split("\n").pop());
    const res = results[run];
    console.log(
      `${run}: ${res.resolved.precision} on a ${res.resolved.baseWeights} base, kernels ${res.kernels}; ${res.seconds.toFixed(1)} s; peak RSS ${res.peakRssGiB.toFixed(2)} GiB`,
    );
  }
  console.log(`\nstep | ${Object.keys(RUNS).join(" | ")}`);
  for (let s = 0; s < steps; s++)
    console.log(
      `${String(s + 1).padStart(4)} | ${Object.values(results)
        .map((res) => res.losses[s].toFixed(6))
        .join(" | ")}`,
    );
  const base = results.fp32.losses;
  for (const run of Object.keys(RUNS).filter((name) => name !== "fp32")) {
    let worst = 0;
    let at = 0;
    results[run].losses.forEach((l, s) => {
      const d = Math.abs(l - base[s]);
      if (d > worst) [worst, at] = [d, s + 1];
    });
    console.log(
      `${run}: largest |loss - fp32| ${worst.toExponential(2)} (step ${at}); first step ${Math.abs(results[run].losses[0] - base[0]).toExponential(2)} of ${base[0].toFixed(4)}`,
    );
  }
}
