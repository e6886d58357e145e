// config.json → LlamaConfig. Only the Llama family is accepted; anything the
// engine would silently compute differently (rope scaling, biases) is refused.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "./errors.js";
import type { LlamaConfig } from "./types.js";

/** Parses a Hugging Face config.json object; `file` is named in errors. */
export function parseLlamaConfig(raw: unknown, file = "config.json"): LlamaConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new EngineError("invalid_file", `${file}: expected a JSON object`, file);
  }
  const json = raw as Record<string, unknown>;
  const architectures = Array.isArray(json.architectures) ? (json.architectures as unknown[]) : [];
  const isLlama = architectures.includes("LlamaForCausalLM") || json.model_type === "llama";
  if (!isLlama) {
    const named = architectures.length > 0 ? architectures.join(", ") : String(json.model_type ?? "none");
    throw new EngineError(
      "unsupported_architecture",
      `${file}: architecture ${named} is not supported (only LlamaForCausalLM / model_type "llama")`,
      file,
    );
  }
  const int = (key: string, fallback?: number): number => {
    const value = json[key] ?? fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
      throw new EngineError(
        "invalid_file",
        `${file}: "${key}" must be a positive integer (got ${String(value)})`,
        file,
      );
    }
    return value;
  };
  const num = (key: string, fallback: number): number => {
    const value = json[key] ?? fallback;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw new EngineError(
        "invalid_file",
        `${file}: "${key}" must be a positive number (got ${String(value)})`,
        file,
      );
    }
    return value;
  };
  if (json.rope_scaling !== undefined && json.rope_scaling !== null) {
    throw new EngineError(
      "unsupported_architecture",
      `${file}: rope_scaling ${JSON.stringify(json.rope_scaling)} is not supported (only null)`,
      file,
    );
  }
  for (const key of ["attention_bias", "mlp_bias"]) {
    if (json[key] === true) {
      throw new EngineError("unsupported_architecture", `${file}: "${key}": true is not supported`, file);
    }
  }
  const hiddenSize = int("hidden_size");
  const numAttentionHeads = int("num_attention_heads");
  const numKeyValueHeads = int("num_key_value_heads", numAttentionHeads);
  const headDim = json.head_dim == null ? hiddenSize / numAttentionHeads : int("head_dim");
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new EngineError("invalid_file", `${file}: head dimension ${headDim} must be an even integer`, file);
  }
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    throw new EngineError(
      "invalid_file",
      `${file}: num_attention_heads ${numAttentionHeads} is not a multiple of num_key_value_heads ${numKeyValueHeads}`,
      file,
    );
  }
  const act = json.hidden_act ?? "silu";
  if (act !== "silu") {
    throw new EngineError(
      "unsupported_architecture",
      `${file}: hidden_act "${String(act)}" is not supported (only silu)`,
      file,
    );
  }
  return {
    hiddenSize,
    intermediateSize: int("intermediate_size"),
    numHiddenLayers: int("num_hidden_layers"),
    numAttentionHeads,
    numKeyValueHeads,
    headDim,
    rmsNormEps: num("rms_norm_eps", 1e-6),
    ropeTheta: num("rope_theta", 10000),
    vocabSize: int("vocab_size"),
    tieWordEmbeddings: json.tie_word_embeddings === true,
    maxPositionEmbeddings: int("max_position_embeddings", 2048),
  };
}

/** Reads and parses <dir>/config.json. */
export function readLlamaConfig(dir: string): LlamaConfig {
  const file = join(dir, "config.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new EngineError("missing_file", `${file}: not found`, file);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new EngineError("invalid_file", `${file}: not valid JSON (${(error as Error).message})`, file);
  }
  return parseLlamaConfig(raw, file);
}
