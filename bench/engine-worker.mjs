// One shape's svc run for bench/engine.mjs, in the child process the driver
// starts (`--worker <shape>`): random weights at the run's precision, LoRA
// training steps with the engine's per-op profile, batch-1 decode through the
// Generator, peak RSS, and the rate of the shape's big matmuls measured after.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SHAPES, trainingGemms } from "./shapes.mjs";
import { bf16Gemm, randomTrainingWeights } from "./train-precision.mjs";

/** The LoRA both sides train: r16/alpha32 on all linear layers. */
export const LORA = { r: 16, alpha: 32 };
/** Prompt tokens before decode. */
export const PROMPT = 16;

export const median = (xs) => {
  const s = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Best GFLOP/s of one matmul shape over `budget` seconds (as bench/kernels.mjs measures). */
function sgemm(kern, [, m, n, k, transA, transB], budget) {
  const fill = (len) => {
    const a = new Float32Array(len);
    for (let i = 0; i < len; i++) a[i] = Math.random() * 2 - 1;
    return a;
  };
  const a = fill(m * k);
  const b = fill(k * n);
  const c = new Float32Array(m * n);
  kern.matmul(a, b, c, m, n, k, transA, transB, false);
  let best = Number.POSITIVE_INFINITY;
  const start = performance.now();
  let calls = 0;
  while (performance.now() - start < budget * 1000 || calls < 2) {
    const t0 = performance.now();
    kern.matmul(a, b, c, m, n, k, transA, transB, false);
    best = Math.min(best, performance.now() - t0);
    calls++;
  }
  return (2 * m * n * k) / (best / 1000) / 1e9;
}

export async function engineWorker(dist, name, steps, decodeTokens, decodeReps, sgemmBudget, precision) {
  const { parseModelConfig } = await import(join(dist, "families", "index.js"));
  const { ModelGraph, profile } = await import(join(dist, "graph", "model.js"));
  const { initLoraAdapter, loraLayersOf, loraParams, zerosLike } = await import(
    join(dist, "adapters", "lora.js")
  );
  const { AdamW, clipGradNorm } = await import(join(dist, "training", "optim.js"));
  const { makeBatch } = await import(join(dist, "data", "batching.js"));
  const { writeTestTokenizer } = await import(join(dist, "testing", "test-tokenizer.js"));
  const { loadTokenizer } = await import(join(dist, "text", "tokenizer.js"));
  const { createGenerator } = await import(join(dist, "generation", "generate.js"));
  const { getKernels } = await import(join(dist, "kernels", "index.js"));
  const { Rng } = await import(join(dist, "rng.js"));

  const shape = SHAPES[name];
  const config = parseModelConfig(shape.config);
  const { weights, resolved } = await randomTrainingWeights(dist, config, precision, getKernels());
  const adapter = initLoraAdapter(config, { ...LORA, targetModules: ["all-linear"] }, 1);
  const gradAdapter = zerosLike(adapter);
  const lora = loraLayersOf(adapter, config);
  const grads = loraLayersOf(gradAdapter, config);
  const params = loraParams(adapter);
  const gradList = loraParams(gradAdapter);
  const optimizer = new AdamW(params, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
  const skip = process.env.BENCH_SKIP_UNLABELED === "1";
  const { graphPrecision } = await import(join(dist, "training", "train-precision.js"));
  const graph = new ModelGraph(config, weights, { skipUnlabeledRows: skip, ...graphPrecision(resolved) });

  const rng = new Rng(0);
  const examples = Array.from({ length: shape.batch }, () => {
    const ids = Int32Array.from({ length: shape.seq }, () => rng.int(config.vocabSize));
    return { inputIds: ids, labels: ids };
  });
  const batch = makeBatch(examples, 0);
  let count = 0;
  for (const t of batch.targets) if (t >= 0) count++;
  const step = () => {
    const { lossSum } = graph.forward(batch, lora, 1 / count);
    graph.backward(lora, grads);
    clipGradNorm(gradList, 1.0);
    optimizer.update(gradList, 2e-4);
    for (const g of gradList) g.fill(0);
    return lossSum / count;
  };
  step(); // warm-up: allocates the activations once
  profile.clear();
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  const trainSeconds = (performance.now() - t0) / 1000;
  // a copy: decode below adds to the same entries
  const profileRows = [...profile.entries()]
    .map(([label, v]) => [label, v.ms / steps, v.calls / steps])
    .sort((a, b) => b[1] - a[1]);

  // decode at batch 1 through the Generator (KV cache), timed from the first new token to the last
  const tokDir = mkdtempSync(join(tmpdir(), "svc-bench-tok-"));
  await writeTestTokenizer(tokDir);
  const tokenizer = await loadTokenizer(tokDir);
  rmSync(tokDir, { recursive: true, force: true });
  const model = { dir: "<random>", config, weights, tokenizer, adapter: null };
  const generator = createGenerator(model, { maxContext: PROMPT + decodeTokens + 2 });
  const prompt = Array.from(examples[0].inputIds.subarray(0, PROMPT));
  const decodeRuns = [];
  for (let rep = 0; rep < decodeReps; rep++) {
    const stamps = [];
    for await (const _ of generator.generate({
      promptIds: prompt,
      maxTokens: decodeTokens + 1,
      temperature: 0,
    })) {
      stamps.push(performance.now());
    }
    decodeRuns.push((stamps.length - 1) / ((stamps[stamps.length - 1] - stamps[0]) / 1000));
  }
  const peakRssMb = process.resourceUsage().maxRSS / 1024; // before the SGEMM buffers below

  // SGEMM of this shape's big matmuls, in this process, after the run (the LM head
  // in the row chunks lm-head.ts runs it in: 2^23 logits at a time, at least 512 rows
  // since 2026-11-24, 256 before that; SVC_BENCH_HEAD_ROWS sets the floor for an older
  // build, e.g. 256 or 1)
  const k = getKernels();
  const gemms = [];
  if (sgemmBudget > 0) {
    const floor = Number(process.env.SVC_BENCH_HEAD_ROWS ?? 512);
    const rows = Math.max(floor, Math.floor(2 ** 23 / config.vocabSize));
    const chunk = Math.max(1, Math.min(shape.batch * shape.seq, rows));
    for (const g of trainingGemms(config, shape.batch, shape.seq, chunk)) {
      gemms.push([
        g[0],
        resolved.precision === "bf16" ? await bf16Gemm(dist, k, g, sgemmBudget) : sgemm(k, g, sgemmBudget),
      ]);
    }
  }
  return {
    engine: "svc",
    kernels: `${k.name}/${k.isa}`,
    precision: resolved.precision,
    skipUnlabeledRows: skip,
    train_tokens_per_s: (shape.batch * shape.seq * steps) / trainSeconds,
    train_step_s: trainSeconds / steps,
    decode_tokens_per_s: median(decodeRuns),
    decode_runs: decodeRuns,
    peak_rss_mb: peakRssMb,
    sgemm: gemms,
    profile: profileRows,
  };
}
