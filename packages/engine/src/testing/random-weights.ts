// Random weights and LoRA adapters for tests and benchmarks of the graph
// (speed does not depend on the values; correctness tests compare two
// computations on the same random values).

import { loraTensorName, resolveTargetModules } from "../adapters/lora.js";
import { familyOf, parseModelConfig } from "../families/index.js";
import { type LayerWeights, type ModelWeights, moduleShape, projectionShape } from "../graph/weights.js";
import { Rng } from "../rng.js";
import type { LoraAdapter, LoraSpec, ModelConfig, Slot } from "../types.js";

export interface TestConfigOptions {
  hiddenSize?: number;
  intermediateSize?: number;
  numHiddenLayers?: number;
  numAttentionHeads?: number;
  numKeyValueHeads?: number;
  headDim?: number;
  rmsNormEps?: number;
  ropeTheta?: number;
  vocabSize?: number;
  tieWordEmbeddings?: boolean;
  maxPositionEmbeddings?: number;
}

/** A small Llama config (GQA: 4 query heads share 2 kv heads), parsed from config.json keys like a real one. */
export function smallTestConfig(
  options: TestConfigOptions = {},
  extra: Record<string, unknown> = {},
): ModelConfig {
  return parseModelConfig({
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_size: options.hiddenSize ?? 32,
    intermediate_size: options.intermediateSize ?? 48,
    num_hidden_layers: options.numHiddenLayers ?? 2,
    num_attention_heads: options.numAttentionHeads ?? 4,
    num_key_value_heads: options.numKeyValueHeads ?? 2,
    head_dim: options.headDim ?? 8,
    rms_norm_eps: options.rmsNormEps ?? 1e-5,
    rope_theta: options.ropeTheta ?? 10000,
    vocab_size: options.vocabSize ?? 300,
    tie_word_embeddings: options.tieWordEmbeddings ?? true,
    max_position_embeddings: options.maxPositionEmbeddings ?? 256,
    ...extra,
  });
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
export function randomModelWeights(config: ModelConfig, seed = 1, embedScale = 0.25): ModelWeights {
  const rng = new Rng(seed);
  const C = config.hiddenSize;
  const b = config.block;
  const embed = uniform(rng, config.vocabSize * C, embedScale);
  const qkSize = (heads: number) => (b.qkNorm === "head" ? config.headDim : heads * config.headDim);
  const projection = (slot: Slot) => {
    const { in: fanIn, out } = projectionShape(config, slot);
    return uniform(rng, out * fanIn, 1 / Math.sqrt(fanIn));
  };
  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const bias: Partial<Record<Slot, Float32Array>> = {};
    for (const slot of b.biases) bias[slot] = uniform(rng, projectionShape(config, slot).out, 0.1);
    layers.push({
      attnNorm: b.attnNorm ? nearOne(rng, C) : null,
      attnOutNorm: b.attnOutNorm ? nearOne(rng, C) : null,
      mlpNorm: b.mlpNorm ? nearOne(rng, C) : null,
      mlpOutNorm: b.mlpOutNorm ? nearOne(rng, C) : null,
      qNorm: b.qkNorm !== "none" ? nearOne(rng, qkSize(config.numAttentionHeads)) : null,
      kNorm: b.qkNorm !== "none" ? nearOne(rng, qkSize(config.numKeyValueHeads)) : null,
      q: projection("q"),
      k: projection("k"),
      v: projection("v"),
      o: projection("o"),
      gate: projection("gate"),
      up: projection("up"),
      down: projection("down"),
      bias,
    });
  }
  const finalNorm = nearOne(rng, C);
  const lmHead = config.tieWordEmbeddings ? embed : uniform(rng, config.vocabSize * C, embedScale);
  return { embed, layers, finalNorm, lmHead };
}

/** An adapter in PEFT naming with both factors random (B ≠ 0, so it changes the outputs). */
export function randomLoraAdapter(config: ModelConfig, spec: LoraSpec, seed = 2): LoraAdapter {
  const rng = new Rng(seed);
  const tensors = new Map<string, Float32Array>();
  const names = resolveTargetModules(config, spec.targetModules);
  const modules = familyOf(config).modules.filter((m) => names.includes(m.name));
  for (let l = 0; l < config.numHiddenLayers; l++) {
    for (const module of modules) {
      const { in: fanIn, out } = moduleShape(config, module);
      tensors.set(loraTensorName(l, module, "A"), uniform(rng, spec.r * fanIn, 1 / Math.sqrt(fanIn)));
      tensors.set(loraTensorName(l, module, "B"), uniform(rng, out * spec.r, 1 / Math.sqrt(spec.r)));
    }
  }
  return { spec: { ...spec, targetModules: names }, tensors };
}
