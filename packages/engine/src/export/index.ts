// svc export: a base model, optionally with a LoRA adapter, written as
//   peft    the adapter folder (adapter_config.json + adapter_model.safetensors)
//   merged  a Hugging Face folder with the adapter folded in (hf-folder.ts)
//   gguf    a GGUF file for llama.cpp plus an Ollama Modelfile beside it
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { loraLayersOf } from "../adapters/lora.js";
import { loadAdapter } from "../adapters/peft.js";
import { EngineError } from "../errors.js";
import { readWeights } from "../loading/checkpoint.js";
import { readModelConfig } from "../loading/config.js";
import type { SafetensorsDtype } from "../loading/safetensors.js";
import { loadTokenizer } from "../text/tokenizer.js";
import { GGUF_QUANTS, type GgufQuant, writeModelGguf } from "./gguf-export.js";
import { chatTemplateOf } from "./gguf-tokenizer.js";
import { writeHfFolder } from "./hf-folder.js";
import { mergeLora } from "./merge.js";
import { modelfile } from "./modelfile.js";

export const EXPORT_FORMATS = ["peft", "merged", "gguf"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** Precisions of a merged folder's safetensors ("base": the base model's own dtype). */
export const MERGED_DTYPES = ["base", "f32", "f16", "bf16"] as const;
export type MergedDtype = (typeof MERGED_DTYPES)[number];
export { GGUF_QUANTS, type GgufQuant };

export interface ExportOptions {
  /** The base model's Hugging Face folder. */
  baseDir: string;
  /** A PEFT adapter folder to fold in (required for peft). */
  adapterDir?: string | null;
  format: ExportFormat;
  /** gguf: f16 | q8_0 | q4_k_m (default f16); merged: base | f32 | f16 | bf16 (default base). */
  quant?: string;
  /** peft and merged: a folder; gguf: a folder, or a path ending in .gguf. */
  out: string;
  /** general.name of a GGUF file. */
  name?: string;
  /** merged: the most bytes per safetensors file before it is sharded (default 2 GiB). */
  shardBytes?: number;
  onProgress?: (progress: { stage: string; done: number; total: number }) => void;
}

export interface ExportResult {
  format: ExportFormat;
  quant: string | null;
  /** The folder that holds what was written. */
  dir: string;
  /** Files written, relative to dir. */
  files: string[];
  bytes: number;
  /** What a runtime computes differently from svc for this export (GGUF: llama.cpp's fixed choices). */
  warnings: string[];
}

const PEFT_FILES = ["adapter_config.json", "adapter_model.safetensors", "README.md"];
const DTYPE: Record<string, SafetensorsDtype> = {
  f32: "F32",
  float32: "F32",
  f16: "F16",
  float16: "F16",
  bf16: "BF16",
  bfloat16: "BF16",
};

function invalid(message: string, field: string): EngineError {
  return new EngineError("invalid_argument", message, field);
}

/** Checks format and quant before any work; returns the quant in effect. */
export function checkExportOptions(
  format: string,
  quant: string | undefined,
  hasAdapter: boolean,
): string | null {
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw invalid(`format "${format}" is not one of ${EXPORT_FORMATS.join(", ")}`, "format");
  }
  if (format === "peft") {
    if (!hasAdapter)
      throw invalid("format peft needs an adapter (a job or checkpoint), not a base model", "format");
    if (quant !== undefined)
      throw invalid("format peft takes no quant: the adapter is written as it is", "quant");
    return null;
  }
  if (format === "gguf") {
    const q = quant ?? "f16";
    if (!(GGUF_QUANTS as readonly string[]).includes(q)) {
      throw invalid(`quant "${q}" is not one of ${GGUF_QUANTS.join(", ")} for gguf`, "quant");
    }
    return q;
  }
  const q = quant ?? "base";
  if (!(MERGED_DTYPES as readonly string[]).includes(q)) {
    throw invalid(`quant "${q}" is not one of ${MERGED_DTYPES.join(", ")} for merged`, "quant");
  }
  return q;
}

function baseDtype(baseDir: string): SafetensorsDtype {
  const raw = JSON.parse(readFileSync(join(baseDir, "config.json"), "utf8")) as Record<string, unknown>;
  return DTYPE[String(raw.dtype ?? raw.torch_dtype ?? "float32")] ?? "F32";
}

export async function exportModel(options: ExportOptions): Promise<ExportResult> {
  const { format, baseDir, adapterDir, out } = options;
  const quant = checkExportOptions(format, options.quant, Boolean(adapterDir));
  const progress = (stage: string, done: number, total: number) =>
    options.onProgress?.({ stage, done, total });
  if (format === "peft") {
    mkdirSync(out, { recursive: true });
    const files: string[] = [];
    let bytes = 0;
    for (const name of PEFT_FILES) {
      const from = join(adapterDir as string, name);
      if (!existsSync(from)) continue;
      copyFileSync(from, join(out, name));
      files.push(name);
      bytes += statSync(from).size;
    }
    loadAdapter(out); // what was copied must be an adapter svc (and PEFT) can load
    return { format, quant, dir: out, files, bytes, warnings: [] };
  }
  progress("loading", 0, 1);
  const config = readModelConfig(baseDir);
  const base = await readWeights(baseDir, config);
  const tokenizer = await loadTokenizer(baseDir);
  const adapter = adapterDir ? loadAdapter(adapterDir) : null;
  progress("merging", 0, 1);
  const weights = mergeLora(
    config,
    base,
    adapter ? loraLayersOf(adapter, config, adapterDir as string) : null,
  );
  progress("merging", 1, 1);
  if (format === "merged") {
    const dtype = quant === "base" ? baseDtype(baseDir) : DTYPE[quant as string];
    progress("writing", 0, 1);
    const files = writeHfFolder(baseDir, config, weights, out, dtype, options.shardBytes);
    if (!files.includes("generation_config.json")) {
      const generation = { bos_token_id: tokenizer.bosTokenId, eos_token_id: tokenizer.eosTokenIds };
      writeFileSync(join(out, "generation_config.json"), `${JSON.stringify(generation, null, 2)}\n`);
      files.push("generation_config.json");
    }
    progress("writing", 1, 1);
    const bytes = files.reduce((n, f) => n + statSync(join(out, f)).size, 0);
    return { format, quant, dir: out, files, bytes, warnings: [] };
  }
  const file = out.endsWith(".gguf") ? out : join(out, `model-${quant}.gguf`);
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true });
  const { bytes, model } = writeModelGguf(file, {
    dir: baseDir,
    config,
    weights,
    tokenizer,
    quant: quant as GgufQuant,
    name: options.name ?? basename(baseDir),
    onTensor: (done, total) => progress("writing", done, total),
  });
  writeFileSync(join(dir, "Modelfile"), modelfile(basename(file), chatTemplateOf(baseDir)));
  return { format, quant, dir, files: [basename(file), "Modelfile"], bytes, warnings: model.warnings };
}
