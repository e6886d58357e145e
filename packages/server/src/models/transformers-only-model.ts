// A model folder whose architecture svc's engine does not implement (GPT-2,
// GPT-NeoX, Mixtral, ...): the engine cannot compute it, so it is never served
// here, but the torch backend trains it with transformers + peft (a job's
// `backend: "torch"` and `hyperparameters.torchModel: "transformers"`,
// docs/gpu-training.md#architectures-svc-does-not-implement). What the server
// says about such a model comes from its files alone, without knowing its
// layout: config.json's architecture and context length, and the safetensors
// headers (tensor names and shapes) for the parameter count and the names a
// LoRA may target.
import { closeSync, existsSync, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { FAMILIES } from "@svc/engine";

export { TRANSFORMERS_ONLY_FAMILY } from "@svc/wire";

/** The settings of a job that trains such a model, as the refusals name them. */
export const TRANSFORMERS_FALLBACK_SETTINGS = `"backend": "torch" and "hyperparameters.torchModel": "transformers"`;

export const TRANSFORMERS_FALLBACK_DOCS = "docs/gpu-training.md#architectures-svc-does-not-implement";

export interface TransformersOnlyModel {
  /** config.json's first architecture, e.g. "GPT2LMHeadModel". */
  architecture: string;
  /** Elements of every tensor in the safetensors files (a tied head is stored once, and counted once). */
  parameters: number;
  contextLength: number;
  /**
   * The leaf module names of the 2-D weights inside the model's numbered layers
   * (e.g. c_attn, c_proj, c_fc for GPT-2): the modules a list of
   * targetModules may name. Embeddings and the output head sit outside the
   * numbered layers and are left out; which of these peft wraps is peft's call.
   */
  loraTargets: string[];
  /** Shape of each 2-D tensor named <module path>.weight, by module path. */
  matrices: Map<string, number[]>;
}

/** Keys transformers' configs give the context length under, in the order tried. */
const CONTEXT_KEYS = ["max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_sequence_length"];

/**
 * Whether svc's engine implements the architecture config.json names, by the
 * engine's own rule (parseModelConfig): one of `architectures` is a family's,
 * or, with no architectures, model_type is.
 */
export function engineImplements(raw: Record<string, unknown>): boolean {
  const architectures = Array.isArray(raw.architectures) ? (raw.architectures as unknown[]) : [];
  if (architectures.length === 0)
    return FAMILIES.some((f) => f.modelTypes.includes(raw.model_type as string));
  return FAMILIES.some((f) => architectures.some((a) => f.architectures.includes(a as string)));
}

/** config.json as an object, or null when it is missing or not a JSON object (the engine names why). */
export function readRawConfig(dir: string): Record<string, unknown> | null {
  try {
    const raw = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
    return typeof raw === "object" && raw !== null && !Array.isArray(raw) ? raw : null;
  } catch {
    return null;
  }
}

/** The safetensors files of a model folder: model.safetensors, or the shards its index names. */
function weightFiles(dir: string): string[] {
  if (existsSync(join(dir, "model.safetensors"))) return [join(dir, "model.safetensors")];
  const index = join(dir, "model.safetensors.index.json");
  if (!existsSync(index))
    throw new Error(`no model.safetensors (nor model.safetensors.index.json) in ${dir}`);
  const map = (JSON.parse(readFileSync(index, "utf8")) as { weight_map?: Record<string, string> }).weight_map;
  if (!map || typeof map !== "object") throw new Error(`${index}: no weight_map`);
  return [...new Set(Object.values(map))].map((file) => join(dir, file));
}

/** The tensors' shapes from a safetensors file's header (8-byte little-endian length, then JSON), without reading the data. */
export function safetensorsShapes(file: string): Map<string, number[]> {
  const fd = openSync(file, "r");
  try {
    const prefix = Buffer.alloc(8);
    if (readSync(fd, prefix, 0, 8, 0) !== 8) throw new Error(`${file}: shorter than a safetensors header`);
    const length = Number(prefix.readBigUInt64LE(0));
    if (length > 100 * 2 ** 20) throw new Error(`${file}: a header of ${length} bytes is not safetensors`);
    const header = Buffer.alloc(length);
    if (readSync(fd, header, 0, length, 8) !== length) throw new Error(`${file}: its header is cut short`);
    const entries = JSON.parse(header.toString("utf8")) as Record<string, { shape?: unknown }>;
    const shapes = new Map<string, number[]>();
    for (const [name, entry] of Object.entries(entries)) {
      if (name === "__metadata__") continue;
      const shape = entry?.shape;
      if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
        throw new Error(`${file}: tensor ${name} has no valid shape`);
      shapes.set(name, shape as number[]);
    }
    return shapes;
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a folder the engine does not implement as transformers would train it.
 * Throws why it cannot be: no architecture named, no context length, no
 * tokenizer.json, or no readable safetensors weights.
 */
export function readTransformersOnlyModel(dir: string, raw: Record<string, unknown>): TransformersOnlyModel {
  const architectures = Array.isArray(raw.architectures) ? raw.architectures : [];
  const architecture = architectures.find((a): a is string => typeof a === "string");
  if (!architecture) throw new Error(`${join(dir, "config.json")} names no architecture ("architectures")`);
  const contextKey = CONTEXT_KEYS.find((key) => Number.isSafeInteger(raw[key]) && (raw[key] as number) > 0);
  if (!contextKey)
    throw new Error(`${join(dir, "config.json")} gives no context length (${CONTEXT_KEYS.join(", ")})`);
  // Datasets, chat templates and the loss mask are the engine's for every backend: its tokenizer reads tokenizer.json.
  if (!existsSync(join(dir, "tokenizer.json"))) throw new Error(`no tokenizer.json in ${dir}`);
  let parameters = 0;
  const matrices = new Map<string, number[]>();
  for (const file of weightFiles(dir)) {
    for (const [name, shape] of safetensorsShapes(file)) {
      parameters += shape.reduce((n, d) => n * d, 1);
      if (shape.length === 2 && name.endsWith(".weight"))
        matrices.set(name.slice(0, -".weight".length), shape);
    }
  }
  if (parameters === 0) throw new Error(`the safetensors files of ${dir} hold no tensors`);
  const loraTargets: string[] = [];
  for (const path of matrices.keys()) {
    const parts = path.split(".");
    const leaf = parts.at(-1) as string;
    // Inside a numbered layer (h.0.attn.c_attn, model.layers.3.mlp.up_proj), not the layer list itself.
    const inLayer = parts.slice(0, -1).some((p) => /^\d+$/.test(p));
    if (inLayer && !/^\d+$/.test(leaf) && !loraTargets.includes(leaf)) loraTargets.push(leaf);
  }
  return { architecture, parameters, contextLength: raw[contextKey] as number, loraTargets, matrices };
}

/**
 * Parameters of the LoRA factors on the targeted modules: r × (rows + columns)
 * of each targeted matrix, whichever way round the architecture stores it.
 */
export function transformersLoraParameters(
  model: TransformersOnlyModel,
  targets: string[],
  r: number,
): number {
  const all = targets.includes("all-linear");
  let count = 0;
  for (const [path, [rows, columns]] of model.matrices) {
    const leaf = path.split(".").at(-1) as string;
    if (all ? model.loraTargets.includes(leaf) : targets.includes(leaf)) count += r * (rows + columns);
  }
  return count;
}
