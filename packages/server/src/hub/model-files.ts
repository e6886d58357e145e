// Which files of a Hub model repo svc fetches, and when a cached snapshot has
// enough of them to train and serve. Only what the engine reads: the config,
// generation config, tokenizer and chat template files, and safetensors
// weights (one file or shards with their index). Pickled weights (.bin, .pth,
// .pt, .ckpt) can run code when loaded and are never fetched; other formats
// (.gguf, onnx/, tflite, flax, openvino) are other runtimes' copies of the same
// weights. Only the repo's top level: subfolders hold such copies
// (original/, onnx/) or other models.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const MODEL_METADATA_FILES = new Set([
  "config.json",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "added_tokens.json",
  "tokenizer.model",
  "vocab.json",
  "merges.txt",
  "chat_template.jinja",
  "chat_template.json",
  "model.safetensors.index.json",
]);

/**
 * Whether svc fetches this path of a model repo. Mistral's repos also carry
 * `consolidated.safetensors`, the same weights in Mistral's own layout: left out.
 */
export function isModelFile(path: string): boolean {
  if (path.startsWith("additional_chat_templates/"))
    return /^additional_chat_templates\/[^/]+\.jinja$/.test(path);
  if (path.includes("/")) return false;
  if (MODEL_METADATA_FILES.has(path)) return true;
  return path.endsWith(".safetensors") && !path.startsWith("consolidated");
}

export const isConfigFile = (path: string): boolean => path === "config.json";

/** A model snapshot is complete when it has config.json and its weights: model.safetensors, or the index and every shard it names. */
export function modelSnapshotComplete(dir: string, files: string[]): boolean {
  const present = new Set(files);
  if (!present.has("config.json")) return false;
  if (present.has("model.safetensors")) return true;
  if (!present.has("model.safetensors.index.json")) return false;
  return indexShards(dir).every((shard) => present.has(shard));
}

/** The shard files model.safetensors.index.json's weight_map names. */
export function indexShards(dir: string): string[] {
  const path = join(dir, "model.safetensors.index.json");
  if (!existsSync(path)) return [];
  try {
    const index = JSON.parse(readFileSync(path, "utf8")) as { weight_map?: Record<string, string> };
    return [...new Set(Object.values(index.weight_map ?? {}))];
  } catch {
    return ["model.safetensors.index.json (unreadable)"];
  }
}
