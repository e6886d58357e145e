// llama.cpp (node-llama-cpp, bench/llama-cpp/) as the decode peer of svc's
// serving formats: GGUF files of the same weights in llama.cpp's own
// equivalent of each format, and llama.cpp's greedy decode speed on them.
//
//   svc format   GGUF tensor type    bits a weight   same weights?
//   fp32         F32                 32              identical
//   bf16         BF16                16              identical (the same rounding)
//   int8         Q8_0                8.5             no: llama.cpp's 8-bit format is per 32-block
//                                                    with an f16 scale, svc's per row with an fp32 one
//   q4_0         Q4_0                4.5             identical: svc's q4_0 blocks are GGUF's bytes
//
// Norms stay F32. The GGUF container, the architecture metadata and the
// tokenizer, and every tensor type's encoding, come from the engine's exporter
// (packages/engine/src/export/).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { archModel } from "../packages/engine/dist/src/export/gguf-arch.js";
import { str, u32, writeGguf } from "../packages/engine/dist/src/export/gguf-file.js";
import { encodedSize, encode as ggufEncode } from "../packages/engine/dist/src/export/gguf-quant.js";
import { tokenizerMetadata } from "../packages/engine/dist/src/export/gguf-tokenizer.js";

const PACKAGE = new URL("./llama-cpp/node_modules/node-llama-cpp/dist/index.js", import.meta.url);
export const llamaCppInstalled = () => existsSync(PACKAGE);

/** svc format → [GGUF tensor type, general.file_type (llama_ftype)]. */
export const GGUF_OF = { fp32: ["F32", 0], bf16: ["BF16", 32], int8: ["Q8_0", 7], q4_0: ["Q4_0", 2] };

/**
 * Writes `weights` (a random-weight shape: config.json object `raw`) as a GGUF
 * file in llama.cpp's equivalent of `format`, with the tokenizer of `tokDir`.
 */
export function writeFormatGguf(file, { format, config, raw, weights, tokenizer, tokDir }) {
  const [type, fileType] = GGUF_OF[format];
  const model = archModel(config, raw, weights, "config.json");
  const metadata = new Map([
    ["general.architecture", str(model.arch)],
    ["general.name", str(`bench-${format}`)],
    ["general.file_type", u32(fileType)],
  ]);
  if (format === "int8" || format === "q4_0") metadata.set("general.quantization_version", u32(2));
  for (const [k, v] of model.metadata) metadata.set(k, v);
  for (const [k, v] of tokenizerMetadata(tokDir, tokenizer, config.vocabSize)) metadata.set(k, v);
  const tensors = model.tensors.map((t) => {
    // a row that is not whole 32-blocks stays F32 (only the tiny shape has one)
    const blocked = type === "Q8_0" || type === "Q4_0";
    const tt = t.shape.length === 1 || (blocked && t.shape[1] % 32 !== 0) ? "F32" : type;
    return {
      name: t.name,
      dims: [...t.shape].reverse(),
      type: tt,
      size: encodedSize(tt, t.data.length),
      bytes: () => ggufEncode(tt, t.data),
    };
  });
  return writeGguf(file, metadata, tensors);
}

let llamaOnce = null;

/** The loaded GGUF model; close() frees it. */
export async function openLlamaCpp(file) {
  const lib = await import(PACKAGE.href);
  llamaOnce ??= lib.getLlama({ gpu: false, build: "never", logLevel: "error" });
  const llama = await llamaOnce;
  const model = await llama.loadModel({ modelPath: file });
  return { model, close: () => model.dispose() };
}

/**
 * Greedy decode of `streams` sequences at once in one context (llama.cpp's
 * parallel sequences, batched into one decode per step): each feeds its
 * prompt, then generates `tokens` tokens. Returns aggregate tokens/s of the
 * generated tokens, timed from the moment every sequence has its first token
 * (so prefill is excluded, as in svc's batch-1 figure) — or, with
 * includePrefill, from the start.
 */
export async function llamaDecode(model, { prompts, tokens, threads, includePrefill = false }) {
  const streams = prompts.length;
  const perSeq = prompts[0].length + tokens + 8;
  const context = await model.createContext({
    contextSize: Math.max(256, streams * perSeq),
    sequences: streams,
    batchSize: Math.max(512, streams * 16),
    threads,
  });
  try {
    const start = performance.now();
    let ready = 0;
    let firstAll = 0;
    let generated = 0;
    await Promise.all(
      prompts.map(async (prompt) => {
        const sequence = context.getSequence();
        let n = 0;
        for await (const _token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
          if (n === 0 && ++ready === streams) firstAll = performance.now();
          if (++n > tokens) break;
          if (firstAll) generated++;
        }
      }),
    );
    const seconds = (performance.now() - (includePrefill ? start : firstAll)) / 1000;
    return (includePrefill ? streams * tokens : generated) / seconds;
  } finally {
    await context.dispose();
  }
}

/** Time to the first generated token of one long prompt, in seconds (llama.cpp prefills in batches of 512). */
export async function llamaPrefill(model, prompt, threads) {
  const context = await model.createContext({ contextSize: prompt.length + 64, batchSize: 512, threads });
  try {
    const start = performance.now();
    for await (const _token of context
      .getSequence()
      .evaluate(prompt, { temperature: 0, yieldEogToken: true }))
      break;
    return (performance.now() - start) / 1000;
  } finally {
    await context.dispose();
  }
}

export const ggufPath = (dir, format) => join(dir, `bench-${format}.gguf`);
