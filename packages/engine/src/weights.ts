// In-memory layout of a Llama model's weights, shared by the training forward /
// backward (model.ts) and the batched decoding path (generate.ts).
// Every matrix is row-major in Hugging Face's [out, in] orientation.
import type { LlamaConfig, LoraTarget } from "./types.js";

export interface LayerWeights {
  inputNorm: Float32Array; // [hidden]
  q: Float32Array; // [nHeads*headDim, hidden]
  k: Float32Array; // [nKv*headDim, hidden]
  v: Float32Array; // [nKv*headDim, hidden]
  o: Float32Array; // [hidden, nHeads*headDim]
  postNorm: Float32Array; // [hidden]
  gate: Float32Array; // [ffn, hidden]
  up: Float32Array; // [ffn, hidden]
  down: Float32Array; // [hidden, ffn]
}

export interface LlamaWeights {
  embed: Float32Array; // [vocab, hidden]
  layers: LayerWeights[];
  finalNorm: Float32Array; // [hidden]
  /** [vocab, hidden]; the same array as embed when tie_word_embeddings. */
  lmHead: Float32Array;
}

/** LoRA factors of one projection: delta W = scale * B·A. */
export interface LoraPair {
  a: Float32Array; // [r, in]
  b: Float32Array; // [out, r]
}

/** LoRA factors by layer and projection, with scale = alpha / r. */
export interface LoraLayers {
  r: number;
  scale: number;
  layers: Partial<Record<LoraTarget, LoraPair>>[];
}

/** Input and output sizes of each projection. */
export function projectionShape(config: LlamaConfig, target: LoraTarget): { in: number; out: number } {
  const qDim = config.numAttentionHeads * config.headDim;
  const kvDim = config.numKeyValueHeads * config.headDim;
  switch (target) {
    case "q_proj":
      return { in: config.hiddenSize, out: qDim };
    case "k_proj":
    case "v_proj":
      return { in: config.hiddenSize, out: kvDim };
    case "o_proj":
      return { in: qDim, out: config.hiddenSize };
    case "gate_proj":
    case "up_proj":
      return { in: config.hiddenSize, out: config.intermediateSize };
    case "down_proj":
      return { in: config.intermediateSize, out: config.hiddenSize };
  }
}

/** Rotary tables cos/sin [maxPos, headDim/2] with inv_freq = theta^(-2i/headDim), as Hugging Face computes them. */
export function ropeTables(config: LlamaConfig, maxPos: number): { cos: Float32Array; sin: Float32Array } {
  const half = config.headDim / 2;
  const cos = new Float32Array(maxPos * half);
  const sin = new Float32Array(maxPos * half);
  for (let i = 0; i < half; i++) {
    // Hugging Face computes inv_freq in float32, then angles in float32.
    const invFreq = Math.fround(1 / config.ropeTheta ** Math.fround((2 * i) / config.headDim));
    for (let p = 0; p < maxPos; p++) {
      const angle = Math.fround(p * invFreq);
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}
