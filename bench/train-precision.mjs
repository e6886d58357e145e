// What bench/engine.mjs needs for --precision: the random weights of a shape
// built the way a bf16 run holds them (never the whole model in fp32, so its
// peak RSS is the run's own), and the rate of the bf16 GEMMs a bf16 step runs.
import { join } from "node:path";

/**
 * A shape's random weights as a `precision` run trains on them: layer by layer
 * (each a one-layer model's, seeded by its index), converted as soon as it is
 * made, so at most one layer is ever fp32 beside the embeddings. `baseWeights`
 * ("int8" or undefined) as the engine's train() takes it. The embedding table
 * holds bf16 values, as a bf16 checkpoint's does (most are published in bf16),
 * so a bf16 or int8 run holds it in bf16 as it would a real model's
 * (trainingWeights); every precision starts from the same values.
 */
export async function randomTrainingWeights(dist, config, precision, kern, baseWeights = undefined) {
  const { randomModelWeights } = await import(join(dist, "testing", "random-weights.js"));
  const { resolvePrecision, trainingWeights } = await import(join(dist, "training", "train-precision.js"));
  const { decodeBf16, encodeBf16 } = await import(join(dist, "quant", "half.js"));
  const resolved = resolvePrecision(precision, baseWeights, kern);
  const one = { ...config, numHiddenLayers: 1, layers: config.layers.slice(0, 1) };
  let whole = null;
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const raw = randomModelWeights(one, 1 + l);
    if (l === 0) decodeBf16(encodeBf16(raw.embed), raw.embed); // rounded in place: a tied head is the same array
    const part = trainingWeights(raw, one, resolved);
    if (!whole) whole = { ...part, layers: [] };
    whole.layers.push(part.layers[0]);
  }
  return { weights: whole, resolved };
}

/** Best GFLOP/s of one of trainingGemms' shapes as a bf16 run computes it (matmulQuantTrain on bf16 W). */
export async function bf16Gemm(dist, kern, [, m, n, k, , transB], budget) {
  const { quantizeMatrix } = await import(join(dist, "quant", "formats.js"));
  const fill = (len) => Float32Array.from({ length: len }, () => Math.random() * 2 - 1);
  // NT: y[m,n] = x[m,k]·Wᵀ, W [n,k]; NN (input gradient): y[m,n] = x[m,k]·W, W [k,n]
  const w = transB ? quantizeMatrix("bf16", fill(n * k), n, k) : quantizeMatrix("bf16", fill(k * n), k, n);
  const x = fill(m * k);
  const y = new Float32Array(m * n);
  const run = () => kern.matmulQuantTrain(x, w, y, m, !transB, false, 1);
  run();
  let best = Number.POSITIVE_INFINITY;
  const start = performance.now();
  for (let calls = 0; performance.now() - start < budget * 1000 || calls < 2; calls++) {
    const t0 = performance.now();
    run();
    best = Math.min(best, performance.now() - t0);
  }
  return (2 * m * n * k) / (best / 1000) / 1e9;
}
