// Loaded engine state for serving: one Model and one Generator per base model
// (loaded on first use and shared by every request and adapter), and a small
// LRU cache of LoRA adapters keyed by their folder.
import {
  createGenerator,
  type Generator,
  type LoraAdapter,
  loadAdapter,
  loadModel,
  type Tokenizer,
} from "@svc/engine";

export interface ServedModel {
  generator: Generator;
  tokenizer: Tokenizer;
}

const ADAPTER_CACHE_SIZE = 16;

export class EnginePool {
  private readonly generators = new Map<string, Promise<ServedModel>>();
  private readonly adapters = new Map<string, Promise<LoraAdapter>>();

  /** The shared generator (and tokenizer) of a base model folder. */
  model(modelDir: string): Promise<ServedModel> {
    let entry = this.generators.get(modelDir);
    if (!entry) {
      entry = (async () => {
        const model = await loadModel(modelDir);
        return { generator: createGenerator(model), tokenizer: model.tokenizer };
      })();
      // A failed load is retried by the next request instead of being cached.
      entry.catch(() => this.generators.delete(modelDir));
      this.generators.set(modelDir, entry);
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
