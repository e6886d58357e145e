// Writes a Hugging Face model folder of any family from a config.json object:
// config.json, model.safetensors (random weights, or the given ones, by the
// family's checkpoint names) and the byte-level test tokenizer. Benchmarks use
// it to hand the same weights to svc and to other runtimes (a GGUF export for
// llama.cpp); a vocabulary larger than the tokenizer's is fine, the GGUF pads it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkpointTensors } from "../export/hf-folder.js";
import { type ModelConfig, parseModelConfig } from "../families/index.js";
import type { ModelWeights } from "../graph/weights.js";
import { writeSafetensors } from "../loading/safetensors.js";
import { randomModelWeights } from "./random-weights.js";
import { writeTestTokenizer } from "./test-tokenizer.js";

export async function writeModelFolder(
  dir: string,
  rawConfig: Record<string, unknown>,
  options: { weights?: ModelWeights; seed?: number } = {},
): Promise<{ config: ModelConfig; weights: ModelWeights }> {
  mkdirSync(dir, { recursive: true });
  const config = parseModelConfig(rawConfig);
  const { vocabSize } = await writeTestTokenizer(dir);
  if (vocabSize > config.vocabSize) {
    throw new Error(
      `vocab_size ${config.vocabSize} is smaller than the test tokenizer's ${vocabSize} tokens`,
    );
  }
  writeFileSync(join(dir, "config.json"), `${JSON.stringify({ ...rawConfig, dtype: "float32" }, null, 2)}\n`);
  const weights = options.weights ?? randomModelWeights(config, options.seed ?? 1);
  writeSafetensors(join(dir, "model.safetensors"), checkpointTensors(config, weights), {
    metadata: { format: "pt" },
  });
  return { config, weights };
}
