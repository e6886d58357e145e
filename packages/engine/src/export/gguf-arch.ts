// A model as llama.cpp reads it: the architecture (general.architecture),
// its hyperparameter keys, and its tensors by llama.cpp's names with the
// layouts llama.cpp reads. What differs per family is data in its module
// (Family.gguf, families/family.ts: the architecture's name, rope layout,
// what its loader reads and what it fixes); this file reads those facts and
// the parsed config, never config.json or a family's name. Norms are written
// as the weight they apply (Gemma's 1 + w). What llama.cpp fixes and a config
// sets otherwise is folded into the weights (an attention scale into a q
// norm) or refused, so a file never computes something else than svc does.
import { EngineError } from "../errors.js";
import { FAMILIES, familyOf, type ModelConfig, type RopeSpec, type Slot } from "../families/index.js";
import { concatSlots, type ModelWeights } from "../graph/weights.js";
import { f32, type GgufValue, str, u32 } from "./gguf-file.js";

export type TensorRole = "embed" | "output" | "attn_v" | "ffn_down" | "matrix" | "vector";

export interface ArchTensor {
  name: string;
  /** Hugging Face orientation: [rows, cols] for a matrix, [n] for a vector. */
  shape: number[];
  data: Float32Array;
  role: TensorRole;
  layer?: number;
}

export interface ArchModel {
  arch: string;
  metadata: Map<string, GgufValue>;
  tensors: ArchTensor[];
  /** What llama.cpp computes differently from svc for this model (said to the user, never silent). */
  warnings: string[];
}

const GGUF_SLOT: Record<Slot, string> = {
  q: "attn_q",
  k: "attn_k",
  v: "attn_v",
  o: "attn_output",
  gate: "ffn_gate",
  up: "ffn_up",
  down: "ffn_down",
};

/** The architectures whose loader reads a rope type's factors, for a refusal's text. */
const readersOf = (type: "llama3" | "longrope") =>
  [...new Set(FAMILIES.filter((f) => f.gguf.ropeFactors.includes(type)).map((f) => f.gguf.arch))].join(", ");

const ordinal = (n: number) => `${n}${n === 1 ? "st" : n === 2 ? "nd" : n === 3 ? "rd" : "th"}`;

/** Permutes q/k rows (and bias entries) per head from rotate-half order to adjacent pairs. */
function interleaveHeads(data: Float32Array, heads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let t = 0; t < 2; t++) {
        const from = (h * headDim + t * half + i) * cols;
        const to = (h * headDim + 2 * i + t) * cols;
        out.set(data.subarray(from, from + cols), to);
      }
    }
  }
  return out;
}

/** Builds the llama.cpp view of a model: its architecture, hyperparameter keys and tensors. */
export function archModel(config: ModelConfig, weights: ModelWeights, file: string): ArchModel {
  const refuse = (why: string) =>
    new EngineError("unsupported_architecture", `${file}: cannot export to GGUF: ${why}`, file);
  const facts = familyOf(config).gguf;
  const arch = facts.arch;
  const A = (key: string) => `${arch}.${key}`;
  const m = new Map<string, GgufValue>();
  const { hiddenSize: C, numAttentionHeads: Hq, numKeyValueHeads: Hkv, headDim: D } = config;
  const L = config.numHiddenLayers;
  m.set(A("context_length"), u32(config.maxPositionEmbeddings));
  m.set(A("embedding_length"), u32(C));
  m.set(A("block_count"), u32(L));
  m.set(A("feed_forward_length"), u32(config.intermediateSize));
  m.set(A("attention.head_count"), u32(Hq));
  m.set(A("attention.head_count_kv"), u32(Hkv));
  m.set(A("attention.key_length"), u32(D));
  m.set(A("attention.value_length"), u32(D));
  m.set(A("attention.layer_norm_rms_epsilon"), f32(config.rmsNormEps));
  m.set(A("vocab_size"), u32(config.vocabSize));
  const tensors: ArchTensor[] = [];
  const warnings: string[] = [];

  // --- rotary embeddings
  const windows = config.layers.map((l) => l.window);
  const sliding = windows.some((w) => w > 0);
  const fullLayer = config.layers.findIndex((l) => l.window === 0);
  const ropeLayer = config.layers.find((l) => l.rope >= 0 && (l.window === 0 || fullLayer < 0));
  if (!ropeLayer) throw refuse("no layer has rotary embeddings");
  const rope = config.ropes[ropeLayer.rope];
  const params = rope.params;
  const theta = params.rope_theta;
  const type = params.rope_type;
  m.set(A("rope.freq_base"), f32(theta));
  m.set(A("rope.dimension_count"), u32(rope.rotaryDim));
  const baseInv = (spec: RopeSpec, base: number) =>
    Float32Array.from(
      { length: spec.rotaryDim / 2 },
      (_, i) => 1 / Math.fround(base ** Math.fround((2 * i) / spec.rotaryDim)),
    );
  const ratios = baseInv(rope, theta).map((b, i) => b / rope.invFreq[i]);
  if (type === "linear") {
    m.set(A("rope.scaling.type"), str("linear"));
    m.set(A("rope.scaling.factor"), f32(Number(params.factor)));
  } else if (type === "yarn") {
    // llama.cpp's generic loaders compute YaRN with beta_fast 32, beta_slow 1 and its own attention factor
    for (const [key, standard] of [
      ["beta_fast", 32],
      ["beta_slow", 1],
    ] as const) {
      if (params[key] != null && Number(params[key]) !== standard) {
        throw refuse(`yarn ${key} ${params[key]} (llama.cpp's ${arch} uses ${standard})`);
      }
    }
    for (const key of ["attention_factor", "mscale", "mscale_all_dim"]) {
      if (params[key] != null) throw refuse(`yarn ${key} (llama.cpp's ${arch} computes its own)`);
    }
    if (params.truncate === false) throw refuse("yarn truncate: false");
    m.set(A("rope.scaling.type"), str("yarn"));
    m.set(A("rope.scaling.factor"), f32(Number(params.factor)));
    const original = params.original_max_position_embeddings;
    if (original != null) m.set(A("rope.scaling.original_context_length"), u32(Number(original)));
  } else if (type === "llama3") {
    if (!facts.ropeFactors.includes("llama3"))
      throw refuse(`rope type llama3 on ${arch}, whose llama.cpp loader reads no rope_freqs`);
    tensors.push({ name: "rope_freqs.weight", shape: [ratios.length], data: ratios, role: "vector" });
  } else if (type === "longrope") {
    // llama.cpp picks the long factors by the context size it runs with, not by each sequence's length
    if (!facts.ropeFactors.includes("longrope")) {
      throw refuse(`rope type longrope on ${arch} (llama.cpp reads it for ${readersOf("longrope")})`);
    }
    const long = rope.long;
    if (!long) throw refuse("longrope without long factors");
    const longRatios = baseInv(rope, theta).map((b, i) => b / long.invFreq[i]);
    tensors.push({
      name: "rope_factors_long.weight",
      shape: [longRatios.length],
      data: longRatios,
      role: "vector",
    });
    tensors.push({ name: "rope_factors_short.weight", shape: [ratios.length], data: ratios, role: "vector" });
    m.set(A("rope.scaling.attn_factor"), f32(rope.attentionFactor));
    m.set(A("rope.scaling.original_context_length"), u32(long.originalMaxPositions));
    warnings.push(
      `llama.cpp uses the long rope factors whenever its context is longer than ${long.originalMaxPositions} tokens, for short sequences too (svc and transformers switch by each sequence's length): run llama.cpp with a context of at most ${long.originalMaxPositions} tokens for the short factors`,
    );
  } else if (type !== "default") {
    throw refuse(`rope type "${type}" has no llama.cpp equivalent this exporter writes`);
  }

  // --- what llama.cpp fixes per architecture must match the config
  if (sliding) {
    if (facts.slidingWindow) {
      const window = Math.max(...windows);
      if (windows.some((w) => w !== 0 && w !== window)) throw refuse("layers have different sliding windows");
      m.set(A("attention.sliding_window"), u32(window));
      // per layer: 1 where the layer attends within the window
      m.set(A("attention.sliding_window_pattern"), {
        type: "array",
        of: "u32",
        value: windows.map((w) => (w > 0 ? 1 : 0)),
      });
      const slidingRope = config.layers.find((l) => l.window > 0);
      if (slidingRope && slidingRope.rope >= 0) {
        m.set(A("rope.freq_base_swa"), f32(config.ropes[slidingRope.rope].params.rope_theta));
      }
    } else {
      warnings.push(
        `llama.cpp's ${arch} attends to the whole context, not a sliding window of ${Math.max(...windows)} positions: outputs for sequences longer than that differ from svc's and transformers'`,
      );
    }
  }
  const every = facts.noRopeEvery;
  if (every > 0) {
    const expected = config.layers.map((_, l) => ((l + 1) % every === 0 ? -1 : 0));
    if (config.layers.some((layer, l) => layer.rope < 0 !== expected[l] < 0)) {
      throw refuse(
        `llama.cpp's ${arch} skips rotary embeddings on every ${ordinal(every)} layer; this config skips others`,
      );
    }
  }
  if (facts.scales) {
    m.set(A("attention.scale"), f32(config.attentionScale));
    m.set(A("embedding_scale"), f32(config.embeddingScale));
    m.set(A("residual_scale"), f32(config.residualScale));
    m.set(A("logit_scale"), f32(1 / config.logitScale));
  } else {
    if (config.embeddingScale !== 1 && !facts.embeddingScaled) throw refuse("an embedding scale");
    if (config.residualScale !== 1 || config.logitScale !== 1) throw refuse("residual or logit scales");
  }
  if (config.finalLogitSoftcap > 0) {
    if (!facts.finalLogitSoftcap) throw refuse("a final logit softcap");
    m.set(A("final_logit_softcapping"), f32(config.finalLogitSoftcap));
  }
  const defaultScale = 1 / Math.sqrt(D);
  // a loader that reads the attention scale computes it; any other fixes 1/√head_dim
  const qScale = facts.scales ? 1 : config.attentionScale / defaultScale;
  if (Math.abs(qScale - 1) > 1e-7 && config.block.qkNorm === "none") {
    throw refuse(`attention scale ${config.attentionScale} (llama.cpp's ${arch} uses 1/√head_dim)`);
  }

  // --- tensors
  const interleave = facts.rope === "norm";
  tensors.push({
    name: "token_embd.weight",
    shape: [config.vocabSize, C],
    data: weights.embed,
    role: "embed",
  });
  tensors.push({ name: "output_norm.weight", shape: [C], data: weights.finalNorm, role: "vector" });
  if (!config.tieWordEmbeddings || facts.writesTiedOutput) {
    tensors.push({
      name: "output.weight",
      shape: [config.vocabSize, C],
      data: weights.lmHead,
      role: "output",
    });
  }
  const b = config.block;
  weights.layers.forEach((w, l) => {
    const p = `blk.${l}`;
    const vector = (name: string, data: Float32Array | null) => {
      if (data) tensors.push({ name: `${p}.${name}`, shape: [data.length], data, role: "vector", layer: l });
    };
    const matrix = (name: string, rows: number, data: Float32Array, role: TensorRole = "matrix") =>
      tensors.push({ name: `${p}.${name}`, shape: [rows, data.length / rows], data, role, layer: l });
    vector("attn_norm.weight", w.attnNorm);
    vector("post_attention_norm.weight", w.attnOutNorm);
    vector("ffn_norm.weight", w.mlpNorm);
    if (w.mlpOutNorm) vector("post_ffw_norm.weight", w.mlpOutNorm);
    if (b.qkNorm !== "none") {
      const qNorm = w.qNorm ? w.qNorm.map((x) => x * qScale) : null;
      vector("attn_q_norm.weight", qNorm);
      vector("attn_k_norm.weight", w.kNorm);
    }
    const qRows = Hq * D;
    const kvRows = Hkv * D;
    const permute = (data: Float32Array, heads: number, cols: number) =>
      interleave ? interleaveHeads(data, heads, D, cols) : data;
    matrix("attn_q.weight", qRows, permute(w.q, Hq, C));
    matrix("attn_k.weight", kvRows, permute(w.k, Hkv, C));
    matrix("attn_v.weight", kvRows, w.v, "attn_v");
    matrix("attn_output.weight", C, w.o);
    if (facts.fusedGateUp) {
      matrix("ffn_up.weight", 2 * config.intermediateSize, concatSlots([w.gate, w.up]));
    } else {
      matrix("ffn_gate.weight", config.intermediateSize, w.gate);
      matrix("ffn_up.weight", config.intermediateSize, w.up);
    }
    matrix("ffn_down.weight", C, w.down, "ffn_down");
    for (const slot of b.biases) {
      if (!facts.biases) throw refuse(`${arch} projection biases`);
      const bias = w.bias[slot] as Float32Array;
      const heads = slot === "q" ? Hq : Hkv;
      vector(`${GGUF_SLOT[slot]}.bias`, slot === "q" || slot === "k" ? permute(bias, heads, 1) : bias);
    }
  });
  if (!b.attnNorm && !facts.attentionWithoutNorm) throw refuse("no norm before attention");
  return { arch, metadata: m, tensors, warnings };
}
