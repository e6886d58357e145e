// Random Llama weights and LoRA adapters for tests and benchmarks of the
// generation path (speed does not depend on the values; correctness tests
// compare two computations on the same random values).
import { loraTensorName } from "../lora.js";
import { Rng } from "../rng.js";
import type { LlamaConfig, LoraAdapter, LoraSpec } from "../types.js";
import { type LayerWeights, type LlamaWeights, projectionShape } from "../weights.js";

/** A LlamaConfig with small defaults (GQA: 4 query heads share 2 kv heads). */
export function smallTestConfig(overrides: Partial<LlamaConfig> = {}): LlamaConfig {
  return {
    hiddenSize: 32,
    intermediateSize: 48,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    headDim: 8,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    vocabSize: 300,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 256,
    ...overrides,
  };
}

function uniform(rng: Rng, n: number, bound: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * rng.next() - 1) * bound;
  return out;
}

function nearOne(rng: Rng, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 1 + 0.2 * (2 * rng.next() - 1);
  return out;
}

/**
 * Weights with U(-1/√in, 1/√in) projections, so activations stay O(1), and
 * U(-embedScale, embedScale) embeddings. Small embeddings keep the layers'
 * output larger than the token's own embedding, so a tied LM head does not
 * just echo the last input token.
 */
export function randomLlamaWeights(config: LlamaConfig, seed = 1, embedScale = 0.25): LlamaWeights {
  const rng = new Rng(seed);
  const C = config.hiddenSize;
  const Q = config.numAttentionHeads * config.headDim;
  const K = config.numKeyValueHeads * config.headDim;
  const F = config.intermediateSize;
  const embed = uniform(rng, config.vocabSize * C, embedScale);
  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    layers.push({
      inputNorm: nearOne(rng, C),
      q: uniform(rng, Q * C, 1 / Math.sqrt(C)),
      k: uniform(rng, K * C, 1 / Math.sqrt(C)),
      v: uniform(rng, K * C, 1 / Math.sqrt(C)),
      o: uniform(rng, C * Q, 1 / Math.sqrt(Q)),
      postNorm: nearOne(rng, C),
      gate: uniform(rng, F * C, 1 / Math.sqrt(C)),
      up: uniform(rng, F * C, 1 / Math.sqrt(C)),
      down: uniform(rng, C * F, 1 / Math.sqrt(F)),
    });
  }
  const finalNorm = nearOne(rng, C);
  const lmHead = config.tieWordEmbeddings ? embed : uniform(rng, config.vocabSize * C, embedScale);
  return { embed, layers, finalNorm, lmHead };
}

/** An adapter in PEFT naming with both factors random (B ≠ 0, so it changes the outputs). */
export function randomLoraAdapter(config: LlamaConfig, spec: LoraSpec, seed = 2): LoraAdapter {
  const rng = new Rng(seed);
  const tensors = new Map<string, Float32Array>();
  for (let l = 0; l < config.numHiddenLayers; l++) {
    for (const target of spec.targetModules) {
      const { in: fanIn, out } = projectionShape(config, target);
      tensors.set(loraTensorName(l, target, "A"), uniform(rng, spec.r * fanIn, 1 / Math.sqrt(fanIn)));
      tensors.set(loraTensorName(l, target, "B"), uniform(rng, out * spec.r, 1 / Math.sqrt(spec.r)));
    }
  }
  return { spec: { ...spec, targetModules: [...spec.targetModules] }, tensors };
}
