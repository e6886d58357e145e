// Loaded engine state for serving: one Model per base model folder (loaded on
// first use), one Generator per folder and weight format (its weights
// converted once, shared by every request and adapter), and a small LRU cache
// of LoRA adapters keyed by their folder.
import {
  createGenerator,
  type Generator,
  type LoraAdapter,
  loadAdapter,
  loadModel,
  type Model,
  servingWeightsAsync,
  type Tokenizer,
  type WeightFormat,
} from "@svc/engine";

export interface ServedModel {
  generator: Generator;
  tokenizer: Tokenizer;
}

const ADAPTER_CACHE_SIZE = 16;

export class EnginePool {
  private readonly models = new Map<string, Promise<Model>>();
  private readonly generators = new Map<string, Promise<ServedModel>>();
  private readonly adapters = new Map<string, Promise<LoraAdapter>>();

  /** The shared generator (and tokenizer) of a base model folder in a weight format. */
  model(modelDir: string, weightFormat: WeightFormat = "fp32"): Promise<ServedModel> {
    const key = `${weightFormat}:${modelDir}`;
    let entry = this.generators.get(key);
    if (!entry) {
      entry = (async () => {
        const model = await this.loaded(modelDir);
        // converted in slices, so the generations already running here keep going meanwhile
        const weights = await servingWeightsAsync(model.weights, model.config, weightFormat);
        return { generator: createGenerator(model, { servingWeights: weights }), tokenizer: model.tokenizer };
      })();
      // A failed load is retried by the next request instead of being cached.
      entry.catch(() => this.generators.delete(key));
      this.generators.set(key, entry);
    }
    return entry;
  }

  /** The fp32 model of a folder, loaded once for every format. */
  private loaded(modelDir: string): Promise<Model> {
    let entry = this.models.get(modelDir);
    if (!entry) {
      entry = loadModel(modelDir);
      entry.catch(() => this.models.delete(modelDir));
      this.models.set(modelDir, entry);
    }
    return entry;
  }

  adapter(adapterDir: string): Promise<LoraAdapter> {
    const hit = this.adapters.get(adapterDir);
    if (hit) {
      this.adapters.delete(adapterDir);
      this.adapters.set(adapterDir, hit);
      return hit;
    }
    const entry = (async () => loadAdapter(adapterDir))();
    entry.catch(() => this.adapters.delete(adapterDir));
    this.adapters.set(adapterDir, entry);
    while (this.adapters.size > ADAPTER_CACHE_SIZE) {
      const oldest = this.adapters.keys().next().value as string;
      this.adapters.delete(oldest);
    }
    return entry;
  }
}
