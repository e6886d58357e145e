// What the families share: sizes, rope parameters in either form, layer types
// (full or sliding attention) and the assembly of a ModelConfig.
import type { ConfigKeys } from "./config-keys.js";
import { parseRope } from "./rope.js";
import type { BlockSpec, FamilyName, LayerSpec, ModelConfig, RopeSpec, Slot } from "./types.js";

export type LayerType = "full_attention" | "sliding_attention";

/** The sizes every family reads the same way (ModelConfig's plain fields). */
export type Sizes = Pick<
  ModelConfig,
  | "hiddenSize"
  | "intermediateSize"
  | "numHiddenLayers"
  | "numAttentionHeads"
  | "numKeyValueHeads"
  | "headDim"
  | "rmsNormEps"
  | "vocabSize"
  | "tieWordEmbeddings"
  | "maxPositionEmbeddings"
>;

export interface SizeDefaults {
  rmsNormEpsKey?: string;
  rmsNormEps?: number;
  tieWordEmbeddings?: boolean;
  headDim?: number;
  maxPositionEmbeddings?: number;
}

export function readSizes(keys: ConfigKeys, defaults: SizeDefaults = {}): Sizes {
  // Llama-era tensor-parallel emulation; 1 computes the plain matmuls
  keys.only("pretraining_tp", 1);
  const hiddenSize = keys.int("hidden_size");
  const numAttentionHeads = keys.int("num_attention_heads");
  const numKeyValueHeads = keys.int("num_key_value_heads", numAttentionHeads);
  const headDim = keys.optionalInt("head_dim") ?? defaults.headDim ?? hiddenSize / numAttentionHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw keys.refuse(`head dimension ${headDim} must be an even integer`, "invalid_file");
  }
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    throw keys.refuse(
      `num_attention_heads ${numAttentionHeads} is not a multiple of num_key_value_heads ${numKeyValueHeads}`,
      "invalid_file",
    );
  }
  return {
    hiddenSize,
    intermediateSize: keys.int("intermediate_size"),
    numHiddenLayers: keys.int("num_hidden_layers"),
    numAttentionHeads,
    numKeyValueHeads,
    headDim,
    rmsNormEps: keys.num(defaults.rmsNormEpsKey ?? "rms_norm_eps", defaults.rmsNormEps ?? 1e-6),
    vocabSize: keys.int("vocab_size"),
    tieWordEmbeddings: keys.bool("tie_word_embeddings", defaults.tieWordEmbeddings ?? false),
    maxPositionEmbeddings: keys.int("max_position_embeddings", defaults.maxPositionEmbeddings ?? 2048),
  };
}

/** The activation key must name the family's activation. */
export function requireActivation(keys: ConfigKeys, key: string, allowed: string[], fallback: string): void {
  const value = keys.get(key) ?? fallback;
  if (!allowed.includes(value as string)) {
    throw keys.refuse(`"${key}": ${JSON.stringify(value)} is not supported (only ${allowed.join(", ")})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The rope parameters of each layer type, from transformers 5's rope_parameters
 * (one object, or one per layer type) or the classic rope_theta + rope_scaling.
 * `classic(type)` gives a family's classic parameters of a layer type
 * (Gemma 3's sliding layers read rope_local_base_freq).
 */
export function ropeParameters(
  keys: ConfigKeys,
  classic: (type: LayerType) => Record<string, unknown> = () => classicRope(keys),
): (type: LayerType) => Record<string, unknown> {
  const v5 = keys.get("rope_parameters");
  if (v5 === undefined || v5 === null) return classic;
  if (!isObject(v5)) throw keys.refuse(`"rope_parameters" must be an object`, "invalid_file");
  if (keys.has("rope_scaling")) {
    throw keys.refuse(`both "rope_parameters" and "rope_scaling" are set; only one form is understood`);
  }
  keys.accept("rope_scaling");
  const perType = isObject(v5.full_attention) || isObject(v5.sliding_attention);
  const lookup = (type: LayerType): Record<string, unknown> => {
    const params = perType ? v5[type] : v5;
    if (!isObject(params)) throw keys.refuse(`"rope_parameters" has no "${type}" entry`, "invalid_file");
    return params;
  };
  // an older copy of rope_theta beside rope_parameters must agree with it
  if (keys.has("rope_theta") && !perType && keys.get("rope_theta") !== (v5.rope_theta ?? 10000)) {
    throw keys.refuse(`"rope_theta" ${keys.get("rope_theta")} disagrees with rope_parameters.rope_theta`);
  }
  keys.accept("rope_theta");
  return lookup;
}

/** rope_theta + rope_scaling as one parameter object. */
export function classicRope(keys: ConfigKeys, thetaKey = "rope_theta"): Record<string, unknown> {
  const scaling = keys.get("rope_scaling");
  if (scaling !== undefined && scaling !== null && !isObject(scaling)) {
    throw keys.refuse(`"rope_scaling" must be an object or null`, "invalid_file");
  }
  return { ...(scaling ?? {}), rope_theta: keys.get(thetaKey) ?? 10000 };
}

/**
 * Layer types from transformers 5's layer_types, or from the family's rule
 * for configs that predate it.
 */
export function layerTypes(keys: ConfigKeys, L: number, fallback: () => LayerType[]): LayerType[] {
  const given = keys.get("layer_types");
  if (given === undefined || given === null) return fallback();
  if (
    !Array.isArray(given) ||
    given.length !== L ||
    given.some((t) => t !== "full_attention" && t !== "sliding_attention")
  ) {
    throw keys.refuse(
      `"layer_types" must list "full_attention" or "sliding_attention" for each of the ${L} layers`,
    );
  }
  return given as LayerType[];
}

export interface Assembly {
  family: FamilyName;
  architecture: string;
  sizes: Sizes;
  block: BlockSpec;
  /** Default: layer_types, else every layer full_attention. */
  types?: LayerType[];
  /** The window of sliding_attention layers (default none). */
  slidingWindow?: number | null;
  /** Default: rope_parameters, else rope_theta + rope_scaling. */
  rope?: (type: LayerType) => Record<string, unknown>;
  /** Layers without rotary embeddings. */
  noRope?: boolean[];
  partialRotaryFactor?: number;
  originalMaxPositionEmbeddings?: number;
  embeddingScale?: number;
  attentionScale?: number;
  residualScale?: number;
  logitScale?: number;
  finalLogitSoftcap?: number;
}

export function assemble(keys: ConfigKeys, a: Assembly): ModelConfig {
  const L = a.sizes.numHiddenLayers;
  const types = a.types ?? layerTypes(keys, L, () => Array(L).fill("full_attention"));
  const ropeOfType = a.rope ?? ropeParameters(keys);
  const ropes: RopeSpec[] = [];
  const ropeOf = new Map<LayerType, number>();
  const layers: LayerSpec[] = types.map((type, l) => {
    let window = 0;
    if (type === "sliding_attention") {
      if (!a.slidingWindow)
        throw keys.refuse(`layer ${l} is sliding_attention but "sliding_window" is not set`);
      window = a.slidingWindow;
    }
    if (a.noRope?.[l]) return { rope: -1, window };
    let index = ropeOf.get(type);
    if (index === undefined) {
      const rope = parseRope(ropeOfType(type), {
        file: keys.file,
        where: types.some((t) => t !== type) ? `rope of ${type} layers` : "rope",
        headDim: a.sizes.headDim,
        maxPositionEmbeddings: a.sizes.maxPositionEmbeddings,
        partialRotaryFactor: a.partialRotaryFactor ?? 1,
        originalMaxPositionEmbeddings: a.originalMaxPositionEmbeddings,
      });
      index = ropes.length;
      ropes.push(rope);
      ropeOf.set(type, index);
    }
    return { rope: index, window };
  });
  keys.refuseUnknown(a.family);
  return {
    family: a.family,
    architecture: a.architecture,
    ...a.sizes,
    block: a.block,
    layers,
    ropes,
    embeddingScale: a.embeddingScale ?? 1,
    attentionScale: a.attentionScale ?? 1 / Math.sqrt(a.sizes.headDim),
    residualScale: a.residualScale ?? 1,
    logitScale: a.logitScale ?? 1,
    finalLogitSoftcap: a.finalLogitSoftcap ?? 0,
  };
}

/** Llama's attention_bias (q/k/v/o) and mlp_bias (gate/up/down), which Granite, SmolLM3 and others share. */
export function llamaBiases(keys: ConfigKeys): Slot[] {
  const biases: Slot[] = [];
  if (keys.bool("attention_bias", false)) biases.push("q", "k", "v", "o");
  if (keys.bool("mlp_bias", false)) biases.push("gate", "up", "down");
  return biases;
}

/** Llama's block: pre-norms, SwiGLU, no biases, no q/k norms. */
export const LLAMA_BLOCK: BlockSpec = {
  attnNorm: true,
  attnOutNorm: false,
  mlpNorm: true,
  mlpOutNorm: false,
  qkNorm: "none",
  activation: "silu",
  biases: [],
};
