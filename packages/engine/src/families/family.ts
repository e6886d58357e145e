// A family module: how one architecture's config.json, checkpoint tensors and
// LoRA targets map onto the engine's ModelConfig and weight slots, how
// llama.cpp reads it (the GGUF export) and the chat formats its models write
// (the Ollama template). docs/adding-a-family.md lists what a new family must
// still touch outside its module.
import type { ChatFormat } from "./chat-format.js";
import type { ConfigKeys } from "./config-keys.js";
import type { LoraModule, ModelConfig } from "./types.js";

/** Checkpoint names of a layer's norms, relative to model.layers.<l>. */
export interface NormNames {
  attnNorm?: string;
  attnOutNorm?: string;
  mlpNorm?: string;
  mlpOutNorm?: string;
  qNorm?: string;
  kNorm?: string;
}

/**
 * How llama.cpp's loader for this family reads a GGUF file, as data (facts
 * from llama.cpp's model loaders and convert_hf_to_gguf.py). What llama.cpp
 * fixes per architecture and a config sets otherwise is folded into the
 * weights (an attention scale into a q norm) or refused by the export, so a
 * file never computes something else than svc does. Families written as the
 * same architecture share one object (Mistral is llama.cpp's llama).
 */
export interface GgufArchitecture {
  /** general.architecture, and the prefix of the hyperparameter keys. */
  arch: string;
  /**
   * How the loader rotates q/k: "norm" rotates adjacent pairs (the export
   * interleaves each head's rows from Hugging Face's rotate-half order),
   * "neox" half-offset pairs (Hugging Face's order, kept).
   */
  rope: "norm" | "neox";
  /** Rope types the loader reads as factor tensors: llama3 as rope_freqs, longrope as rope_factors_long/short. */
  ropeFactors: readonly ("llama3" | "longrope")[];
  /** Sliding windows are metadata the loader reads; otherwise llama.cpp attends to the whole context (the export warns). */
  slidingWindow: boolean;
  /** The loader skips rotary embeddings on every nth layer (SmolLM3: 4), whatever the file says; 0: on none. */
  noRopeEvery: number;
  /** The attention, embedding, residual and logit scales are metadata the loader reads (Granite); otherwise it fixes them. */
  scales: boolean;
  /** The loader scales the embeddings itself (Gemma's √hidden). */
  embeddingScaled: boolean;
  /** The loader reads final_logit_softcapping. */
  finalLogitSoftcap: boolean;
  /** The MLP's gate and up are one ffn_up tensor, gate rows first (Phi-3). */
  fusedGateUp: boolean;
  /** The loader reads projection biases. */
  biases: boolean;
  /** output.weight is written even when it is tied to the embeddings (OLMo 2's loader requires it). */
  writesTiedOutput: boolean;
  /** The loader computes attention without a norm before it (OLMo 2's norms after each branch). */
  attentionWithoutNorm: boolean;
}

export interface Family {
  name: ModelConfig["family"];
  /** config.json "architectures" values this family reads. */
  architectures: readonly string[];
  /** config.json "model_type" values. */
  modelTypes: readonly string[];
  parse(keys: ConfigKeys, architecture: string): ModelConfig;
  norms: NormNames;
  /** RMSNorm weights are stored as w and applied as (1 + w) (Gemma). */
  normPlusOne: boolean;
  /** The linear layers of a decoder layer, as checkpoint modules: PEFT's targets ("all-linear" is all of them). */
  modules: readonly LoraModule[];
  /** How llama.cpp reads this family (the GGUF export). */
  gguf: GgufArchitecture;
  /** The chat formats of the family's published instruct models, as the Ollama template writes them (none: Ollama reads the GGUF's template). */
  ollama: { chatFormats: readonly ChatFormat[] };
}

/** Llama's seven projections, one checkpoint tensor each. */
export const SEPARATE_PROJECTIONS: readonly LoraModule[] = [
  { name: "q_proj", parent: "self_attn", slots: ["q"] },
  { name: "k_proj", parent: "self_attn", slots: ["k"] },
  { name: "v_proj", parent: "self_attn", slots: ["v"] },
  { name: "o_proj", parent: "self_attn", slots: ["o"] },
  { name: "gate_proj", parent: "mlp", slots: ["gate"] },
  { name: "up_proj", parent: "mlp", slots: ["up"] },
  { name: "down_proj", parent: "mlp", slots: ["down"] },
];

export const LLAMA_NORMS: NormNames = { attnNorm: "input_layernorm", mlpNorm: "post_attention_layernorm" };

/** Llama's checkpoint layout: its two norms, weights applied as they are, seven separate projections. */
export const LLAMA_LAYOUT: Pick<Family, "norms" | "normPlusOne" | "modules"> = {
  norms: LLAMA_NORMS,
  normPlusOne: false,
  modules: SEPARATE_PROJECTIONS,
};
