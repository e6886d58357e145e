// In-memory models for generation tests: random weights over the byte-level
// test tokenizer, with the training forward as logits().
import { loraLayersOf } from "../adapters/lora.js";
import { ModelGraph } from "../graph/model.js";
import type { ModelWeights } from "../graph/weights.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { LoraAdapter, Model, ModelConfig, Tokenizer } from "../types.js";
import { randomModelWeights, smallTestConfig } from "./random-weights.js";
import { writeTestTokenizer } from "./test-tokenizer.js";

/** A Model over in-memory weights, with the training forward as its logits(). */
export function memoryModel(
  config: ModelConfig,
  weights: ModelWeights,
  tokenizer: Tokenizer,
  adapter: LoraAdapter | null = null,
): Model {
  const graph = new ModelGraph(config, weights);
  return {
    dir: "<memory>",
    weights,
    config,
    tokenizer,
    adapter,
    logits: (ids) => graph.logits(ids, adapter ? loraLayersOf(adapter, config) : null),
    withAdapter: (other) => memoryModel(config, weights, tokenizer, other),
  };
}

/**
 * A small random model (2 layers, 512 positions) whose tokenizer, written to
 * `dir`, has one token per byte: multi-byte characters span tokens.
 */
export async function byteTokenModel(dir: string): Promise<Model> {
  const { vocabSize } = await writeTestTokenizer(dir);
  const tokenizer = await loadTokenizer(dir);
  const config = smallTestConfig({ vocabSize, numHiddenLayers: 2, maxPositionEmbeddings: 512 });
  return memoryModel(config, randomModelWeights(config, 3), tokenizer);
}
