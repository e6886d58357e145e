// The families the engine computes, found by config.json's architecture.
import { EngineError } from "../errors.js";
import { CHATML, type ChatFormat } from "./chat-format.js";
import { ConfigKeys } from "./config-keys.js";
import type { Family } from "./family.js";
import { GEMMA_CHAT, gemma3 } from "./gemma3.js";
import { LLAMA3_CHAT, llama, mistral } from "./llama.js";
import { GRANITE_CHAT, granite, OLMO2_CHAT, olmo2, smollm3 } from "./others.js";
import { PHI3_CHAT, PHI4_CHAT, phi3 } from "./phi3.js";
import { qwen2, qwen3 } from "./qwen.js";
import type { FamilyName, LoraModule, ModelConfig } from "./types.js";

export type { ChatFormat } from "./chat-format.js";
export type { Family, GgufArchitecture } from "./family.js";
export * from "./types.js";

/** Every family by its name: a FamilyName without its module does not compile. */
export const FAMILY_BY_NAME = {
  llama,
  mistral,
  qwen2,
  qwen3,
  gemma3,
  phi3,
  smollm3,
  olmo2,
  granite,
} as const satisfies Record<FamilyName, Family>;

export const FAMILIES: readonly Family[] = Object.values(FAMILY_BY_NAME);

/**
 * The families' chat formats in the order a Jinja template is matched
 * against their markers: the first whose marker the template contains is its
 * format. Order matters where one format's marker also occurs in another's
 * template (Phi-3's "<|end|>" in Phi-4-mini's, OLMo 2's "<|user|>" in both
 * Phi's). A test holds this list equal to the formats the families name.
 */
export const CHAT_FORMATS: readonly ChatFormat[] = [
  CHATML,
  LLAMA3_CHAT,
  GEMMA_CHAT,
  GRANITE_CHAT,
  PHI4_CHAT,
  PHI3_CHAT,
  OLMO2_CHAT,
];

/** Every LoRA module name some family has, and "all-linear" (a model's own list: loraModulesOf). */
export const LORA_MODULE_NAMES: readonly string[] = [
  ...new Set(FAMILIES.flatMap((f) => f.modules.map((m) => m.name))),
  "all-linear",
];

export function familyOf(config: ModelConfig): Family {
  return FAMILY_BY_NAME[config.family];
}

/** Parses a Hugging Face config.json object; `file` is named in errors. */
export function parseModelConfig(raw: unknown, file = "config.json"): ModelConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new EngineError("invalid_file", `${file}: expected a JSON object`, file);
  }
  const json = raw as Record<string, unknown>;
  const architectures = Array.isArray(json.architectures) ? (json.architectures as unknown[]) : [];
  const family =
    FAMILIES.find((f) => architectures.some((a) => f.architectures.includes(a as string))) ??
    (architectures.length === 0
      ? FAMILIES.find((f) => f.modelTypes.includes(json.model_type as string))
      : undefined);
  if (!family) {
    const named = architectures.length > 0 ? architectures.join(", ") : String(json.model_type ?? "none");
    const known = FAMILIES.flatMap((f) => f.architectures).join(", ");
    throw new EngineError(
      "unsupported_architecture",
      `${file}: architecture ${named} is not supported (supported: ${known})`,
      file,
    );
  }
  if (json.model_type !== undefined && !family.modelTypes.includes(json.model_type as string)) {
    throw new EngineError(
      "unsupported_architecture",
      `${file}: model_type "${String(json.model_type)}" does not match architecture ${family.architectures[0]}`,
      file,
    );
  }
  const architecture = (architectures.find((a) => family.architectures.includes(a as string)) ??
    family.architectures[0]) as string;
  return family.parse(new ConfigKeys(json, file), architecture);
}

/** The modules a LoRA adapter may target on this model (PEFT's names; "all-linear" means all of them). */
export function loraModulesOf(config: ModelConfig): readonly LoraModule[] {
  return familyOf(config).modules;
}

/** Parameters of the base model, counted from the checkpoint tensors the config implies. */
export function parameterCount(config: ModelConfig): number {
  const {
    hiddenSize: C,
    intermediateSize: F,
    vocabSize: V,
    numAttentionHeads: Hq,
    numKeyValueHeads: Hkv,
  } = config;
  const Q = Hq * config.headDim;
  const K = Hkv * config.headDim;
  const b = config.block;
  const out: Record<string, number> = { q: Q, k: K, v: K, o: C, gate: F, up: F, down: C };
  let layer = 2 * Q * C + 2 * K * C + 3 * F * C;
  for (const slot of b.biases) layer += out[slot];
  layer += C * [b.attnNorm, b.attnOutNorm, b.mlpNorm, b.mlpOutNorm].filter(Boolean).length;
  if (b.qkNorm === "head") layer += 2 * config.headDim;
  if (b.qkNorm === "projection") layer += Q + K;
  return V * C + config.numHiddenLayers * layer + C + (config.tieWordEmbeddings ? 0 : V * C);
}
