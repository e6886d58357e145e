// What the engine knows about a model after reading its config.json: the
// sizes, and the family's differences from Llama as data. One forward and
// backward graph (graph.ts) reads this description for training, logits and
// decode; a family module (families/*.ts) fills it in from config.json.

/** The architectures the engine computes exactly as transformers does. */
export type FamilyName =
  | "llama"
  | "mistral"
  | "qwen2"
  | "qwen3"
  | "gemma3"
  | "phi3"
  | "smollm3"
  | "olmo2"
  | "granite";

/** The projections of one decoder layer, as the graph computes them (fused checkpoint tensors are split into these). */
export type Slot = "q" | "k" | "v" | "o" | "gate" | "up" | "down";
export const SLOTS: readonly Slot[] = ["q", "k", "v", "o", "gate", "up", "down"];

/** One rotary embedding: inverse frequencies for the first rotaryDim dims of each head. */
export interface RopeSpec {
  /** Dims of a head that rotate (rotate_half pairs i with i + rotaryDim/2); the rest pass through. */
  rotaryDim: number;
  /** [rotaryDim/2] inverse frequencies, float32 as transformers computes them. */
  invFreq: Float32Array;
  /** Multiplies cos and sin (yarn and longrope; 1 otherwise). */
  attentionFactor: number;
  /**
   * Longrope: the inverse frequencies transformers switches to for a forward
   * pass of a sequence longer than originalMaxPositions (its long_factor).
   */
  long?: { invFreq: Float32Array; originalMaxPositions: number };
  /**
   * The parameters this rope was computed from, as config.json gave them:
   * rope_type and rope_theta filled in (the older "type" key folded into
   * rope_type), and original_max_position_embeddings from the config's top
   * level where the family reads it there (Phi-3). Writers of other formats
   * (the GGUF export) read these instead of config.json again.
   */
  params: RopeParams;
}

export type RopeParams = Readonly<Record<string, unknown>> & { rope_type: string; rope_theta: number };

/** What differs between layers: their rotary embedding (or none) and attention window. */
export interface LayerSpec {
  /** Index into ModelConfig.ropes, or -1 for a layer without rotary embeddings (SmolLM3). */
  rope: number;
  /** Sliding window: a query attends to the last `window` positions, itself included; 0 = all earlier positions. */
  window: number;
}

/**
 * The decoder block, as data. Each residual branch is
 *   x += residualScale · outNorm?(branch(inNorm?(x)))
 * with the attention branch o(attn(rope(qkNorm(q)), rope(qkNorm(k)), v)) and
 * the MLP branch down(act(gate) · up).
 */
export interface BlockSpec {
  /** RMSNorm before attention (input_layernorm); OLMo 2 has none. */
  attnNorm: boolean;
  /** RMSNorm on the attention output before the residual add (Gemma 3, OLMo 2). */
  attnOutNorm: boolean;
  /** RMSNorm before the MLP (Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm). */
  mlpNorm: boolean;
  /** RMSNorm on the MLP output before the residual add (Gemma 3, OLMo 2). */
  mlpOutNorm: boolean;
  /** q/k RMSNorm before RoPE: per head over headDim (Qwen3, Gemma 3) or over the whole projection (OLMo 2). */
  qkNorm: "none" | "head" | "projection";
  /** The gate activation: SwiGLU (silu) or GeGLU (gelu, tanh approximation). */
  activation: "silu" | "gelu_tanh";
  /** Projections with a bias vector. */
  biases: readonly Slot[];
}

export interface ModelConfig {
  family: FamilyName;
  /** config.json's architecture, e.g. "Qwen3ForCausalLM". */
  architecture: string;
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  rmsNormEps: number;
  vocabSize: number;
  tieWordEmbeddings: boolean;
  /** Most positions the engine runs (the context length). */
  maxPositionEmbeddings: number;
  block: BlockSpec;
  /** [numHiddenLayers] */
  layers: LayerSpec[];
  ropes: RopeSpec[];
  /** Multiplies the token embeddings (Gemma: √hidden; Granite: embedding_multiplier). */
  embeddingScale: number;
  /** The attention logits' scale (1/√headDim unless the family sets it). */
  attentionScale: number;
  /** Multiplies each residual branch before it is added (Granite). */
  residualScale: number;
  /** Multiplies the logits (Granite: 1 / logits_scaling). */
  logitScale: number;
  /** logits = cap · tanh(logits / cap) when > 0 (Gemma's final_logit_softcapping). */
  finalLogitSoftcap: number;
}

/** A module PEFT can adapt, by its name in the checkpoint, and the slots its output covers in order. */
export interface LoraModule {
  name: string;
  /** "self_attn" or "mlp": the module's parent in PEFT's tensor names. */
  parent: "self_attn" | "mlp";
  slots: readonly Slot[];
}
