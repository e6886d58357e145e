// Writes a model (with any adapter already folded in) as a GGUF file:
// general.* metadata, the architecture's hyperparameters (gguf-arch.ts), the
// tokenizer and chat template (gguf-tokenizer.ts), and the tensors in the
// chosen quantization:
//   f16     every matrix F16; norms, biases and rope factors F32
//   q8_0    every matrix Q8_0 (F16 where a row is not whole 32-value blocks)
//   q4_k_m  llama.cpp's Q4_K_M mix: Q4_K, with Q6_K for the output head (or
//           the tied embedding) and for attn_v and ffn_down on the layers
//           llama.cpp gives more bits (the first and last eighth and every
//           third between); rows that are not whole 256-value blocks fall
//           back as llama.cpp's quantizer does (Q4_K → Q5_0, Q6_K → Q8_0,
//           then F16)
import { join } from "node:path";
import type { ModelConfig } from "../families/index.js";
import type { ModelWeights } from "../graph/weights.js";
import type { Tokenizer } from "../types.js";
import { type ArchModel, type ArchTensor, archModel } from "./gguf-arch.js";
import { type GgmlTypeName, type GgufTensor, type GgufValue, str, u32, writeGguf } from "./gguf-file.js";
import { BLOCK, encode, encodedSize } from "./gguf-quant.js";
import { tokenizerMetadata } from "./gguf-tokenizer.js";

export const GGUF_QUANTS = ["f16", "q8_0", "q4_k_m"] as const;
export type GgufQuant = (typeof GGUF_QUANTS)[number];

/** general.file_type (llama_ftype) of each quantization. */
const FILE_TYPE: Record<GgufQuant, number> = { f16: 1, q8_0: 7, q4_k_m: 15 };

const moreBits = (i: number, n: number) =>
  i < Math.floor(n / 8) || i >= Math.floor((7 * n) / 8) || (i - Math.floor(n / 8)) % 3 === 2;

function fallback(type: GgmlTypeName, cols: number): GgmlTypeName {
  let t = type;
  if (cols % BLOCK[t] !== 0) t = t === "Q4_K" ? "Q5_0" : t === "Q6_K" ? "Q8_0" : t;
  if (cols % BLOCK[t] !== 0) t = "F16";
  return t;
}

/** The ggml type of one tensor under a quantization. */
export function tensorType(t: ArchTensor, quant: GgufQuant, layers: number, tied: boolean): GgmlTypeName {
  if (t.shape.length === 1) return "F32";
  const cols = t.shape[1];
  if (quant === "f16") return "F16";
  if (quant === "q8_0") return fallback("Q8_0", cols);
  if (t.role === "output" || (t.role === "embed" && tied)) return cols % 256 === 0 ? "Q6_K" : "Q8_0";
  if ((t.role === "attn_v" || t.role === "ffn_down") && moreBits(t.layer ?? 0, layers))
    return fallback("Q6_K", cols);
  return fallback("Q4_K", cols);
}

export interface GgufExportInput {
  dir: string;
  config: ModelConfig;
  weights: ModelWeights;
  tokenizer: Tokenizer;
  quant: GgufQuant;
  name: string;
  onTensor?: (done: number, total: number) => void;
}

/** Writes the GGUF file; returns its size in bytes and the architecture model (for tests). */
export function writeModelGguf(file: string, input: GgufExportInput): { bytes: number; model: ArchModel } {
  const { config, quant } = input;
  const model = archModel(config, input.weights, join(input.dir, "config.json"));
  const metadata = new Map<string, GgufValue>();
  metadata.set("general.architecture", str(model.arch));
  metadata.set("general.name", str(input.name));
  metadata.set("general.file_type", u32(FILE_TYPE[quant]));
  if (quant !== "f16") metadata.set("general.quantization_version", u32(2));
  for (const [k, v] of model.metadata) metadata.set(k, v);
  for (const [k, v] of tokenizerMetadata(input.dir, input.tokenizer, config.vocabSize)) metadata.set(k, v);
  const tied = !model.tensors.some((t) => t.role === "output");
  let done = 0;
  const tensors: GgufTensor[] = model.tensors.map((t) => {
    const type = tensorType(t, quant, config.numHiddenLayers, tied);
    return {
      name: t.name,
      dims: [...t.shape].reverse(),
      type,
      size: encodedSize(type, t.data.length),
      bytes: () => {
        const bytes = encode(type, t.data);
        input.onTensor?.(++done, model.tensors.length);
        return bytes;
      },
    };
  });
  return { bytes: writeGguf(file, metadata, tensors), model };
}
