// A family module: how one architecture's config.json, checkpoint tensors and
// LoRA targets map onto the engine's ModelConfig and weight slots.
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
