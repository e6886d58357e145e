// loadModel(dir): a Hugging Face model folder as transformers saves it
// (config.json, model.safetensors or a sharded index, tokenizer files) of any
// supported family, optionally with a PEFT LoRA adapter applied.
// loadServingModel(dir, format): the same folder held for serving only, its
// weights converted as they are read.

import { loraLayersOf } from "../adapters/lora.js";
import { loadAdapter } from "../adapters/peft.js";
import { EngineError } from "../errors.js";
import type { ModelConfig } from "../families/index.js";
import { ModelGraph } from "../graph/model.js";
import type { LoraLayers, ModelWeights } from "../graph/weights.js";
import type { WeightFormat } from "../quant/formats.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { LoadModelOptions, LoraAdapter, Model, Tokenizer } from "../types.js";
import { readWeightsAs } from "./checkpoint.js";
import { readModelConfig } from "./config.js";
import { readMatrixAsync, readServingWeights, type ServingModel } from "./serving-weights.js";

export async function loadModel(dir: string, options: LoadModelOptions = {}): Promise<Model> {
  const config = readModelConfig(dir);
  // a slice of rows at a time, yielding between slices: other generations of the process go on meanwhile
  const weights = await readWeightsAs(dir, config, readMatrixAsync);
  const tokenizer = await loadTokenizer(dir);
  const adapter = options.adapter ? loadAdapter(options.adapter) : null;
  return new LoadedModel(dir, config, weights, tokenizer, adapter, { graph: null });
}

/**
 * A model folder for generation in `weightFormat`, converted matrix by matrix
 * as the checkpoint is read, so the fp32 weights are never all held (peak:
 * the converted weights plus one fp32 tensor). Adapters come per request.
 */
export async function loadServingModel(dir: string, weightFormat: WeightFormat): Promise<ServingModel> {
  const config = readModelConfig(dir);
  const tokenizer = await loadTokenizer(dir);
  const weights = await readServingWeights(dir, config, weightFormat);
  return { dir, config, tokenizer, weightFormat, weights };
}

/** Views of one model share the base weights and one forward graph (logits() is synchronous). */
interface SharedGraph {
  graph: ModelGraph | null;
}

export class LoadedModel implements Model {
  readonly lora: LoraLayers | null;

  constructor(
    readonly dir: string,
    readonly config: ModelConfig,
    readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    readonly adapter: LoraAdapter | null,
    private readonly shared: SharedGraph,
  ) {
    this.lora = adapter ? loraLayersOf(adapter, config, "adapter") : null;
  }

  logits(tokenIds: ArrayLike<number>): Float32Array {
    const V = this.config.vocabSize;
    if (tokenIds.length === 0) throw new EngineError("invalid_argument", "logits: tokenIds is empty");
    for (let i = 0; i < tokenIds.length; i++) {
      const id = tokenIds[i];
      if (!Number.isInteger(id) || id < 0 || id >= V) {
        throw new EngineError(
          "invalid_argument",
          `logits: tokenIds[${i}] = ${id} is not a token id in [0, ${V})`,
        );
      }
    }
    this.shared.graph ??= new ModelGraph(this.config, this.weights, { inferenceOnly: true });
    return this.shared.graph.logits(tokenIds, this.lora);
  }

  withAdapter(adapter: LoraAdapter | null): Model {
    return new LoadedModel(this.dir, this.config, this.weights, this.tokenizer, adapter, this.shared);
  }
}
