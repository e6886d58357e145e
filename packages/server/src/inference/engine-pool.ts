// Loaded engine state for serving: one generator per base model folder and
// weight format (its weights shared by every request and adapter of that
// format), and a small LRU cache of LoRA adapters keyed by their folder.
//
// Memory (docs/serving-formats.md#memory): a converted format is read from the
// checkpoint and converted matrix by matrix, so a model served here only in
// converted formats has no fp32 copy in the process. When the model is also
// served in fp32 here, that one fp32 copy is what the other formats are
// converted from. A format that sits idle while another format of the same
// model serves (a deployment switched formats) is released after
// idleReleaseMs; a later request in it loads it again from disk.
import {
  createGenerator,
  type Generator,
  heldWeightBytes,
  type LoraAdapter,
  loadAdapter,
  loadModel,
  loadServingModel,
  type Model,
  type ServingWeights,
  servingWeightsAsync,
  type Tokenizer,
  type WeightFormat,
} from "@svc/engine";

export interface ServedModel {
  generator: Generator;
  tokenizer: Tokenizer;
}

/** What the pool holds of one model folder in one format. */
export interface HeldFormat {
  modelDir: string;
  weightFormat: WeightFormat;
  /** Bytes of the weight matrices (projections, embeddings, LM head). */
  matrixBytes: number;
  /** Of those, bytes held as fp32 matrices (all of them in fp32, none in a converted format). */
  fp32MatrixBytes: number;
  /** Generations running on it now. */
  running: number;
}

export interface EnginePoolOptions {
  /** How long a format may sit idle while another format of its model serves, before it is released (default 10 min). */
  idleReleaseMs?: number;
  /** Where lines about loads and releases go (default: nowhere). */
  log?: (line: string) => void;
}

interface Loaded {
  served: ServedModel;
  /** The fp32 model, kept only by the fp32 format: the other formats of its folder convert from it. */
  fp32: Model | null;
  weights: ServingWeights;
}

interface Entry {
  format: WeightFormat;
  ready: Promise<Loaded>;
  loaded: Loaded | null;
  running: number;
  lastUsed: number;
}

const ADAPTER_CACHE_SIZE = 16;
const DEFAULT_IDLE_RELEASE_MS = 10 * 60_000;
const MiB = 1024 * 1024;

export class EnginePool {
  /** Model folder → its formats held (or loading). */
  private readonly entries = new Map<string, Map<WeightFormat, Entry>>();
  private readonly adapters = new Map<string, Promise<LoraAdapter>>();
  private readonly idleReleaseMs: number;
  private readonly log: (line: string) => void;
  private readonly sweep: NodeJS.Timeout;

  constructor(options: EnginePoolOptions = {}) {
    this.idleReleaseMs = options.idleReleaseMs ?? DEFAULT_IDLE_RELEASE_MS;
    this.log = options.log ?? (() => {});
    const period = Math.min(Math.max(this.idleReleaseMs / 2, 10), 60_000);
    this.sweep = setInterval(() => this.releaseIdle(), period);
    this.sweep.unref();
  }

  /** The shared generator (and tokenizer) of a base model folder in a weight format. */
  async model(modelDir: string, weightFormat: WeightFormat = "fp32"): Promise<ServedModel> {
    const entry = this.entry(modelDir, weightFormat);
    entry.lastUsed = Date.now();
    return (await entry.ready).served;
  }

  /**
   * Marks a generation on the folder's format as running until the returned
   * function is called: a format is not released while it generates.
   */
  hold(modelDir: string, weightFormat: WeightFormat): () => void {
    const entry = this.entries.get(modelDir)?.get(weightFormat);
    if (!entry) return () => {};
    entry.running++;
    entry.lastUsed = Date.now();
    return () => {
      entry.running--;
      entry.lastUsed = Date.now();
    };
  }

  /** Every format held (loaded, not loading), with its weights' bytes. */
  held(): HeldFormat[] {
    const out: HeldFormat[] = [];
    for (const [modelDir, formats] of this.entries) {
      for (const entry of formats.values()) {
        if (!entry.loaded) continue;
        const bytes = heldWeightBytes(entry.loaded.weights);
        out.push({
          modelDir,
          weightFormat: entry.format,
          matrixBytes: bytes.matrices,
          fp32MatrixBytes: bytes.fp32Matrices,
          running: entry.running,
        });
      }
    }
    return out;
  }

  /**
   * Releases every format that has run nothing for idleReleaseMs while
   * another format of the same model was used more recently (the timer calls
   * this; `now` lets a caller judge at another time).
   */
  releaseIdle(now = Date.now()): void {
    for (const [modelDir, formats] of this.entries) {
      if (formats.size < 2) continue;
      const latest = Math.max(...[...formats.values()].map((e) => e.lastUsed));
      for (const entry of [...formats.values()]) {
        const idle = now - entry.lastUsed;
        if (!entry.loaded || entry.running > 0 || idle < this.idleReleaseMs || entry.lastUsed >= latest)
          continue;
        formats.delete(entry.format);
        const others = [...formats.keys()].join(", ");
        this.log(
          `released ${modelDir} in ${entry.format} (idle ${Math.round(idle / 1000)} s while ${others} served; a later request loads it again)`,
        );
      }
    }
  }

  close(): void {
    clearInterval(this.sweep);
  }

  private entry(modelDir: string, format: WeightFormat): Entry {
    let formats = this.entries.get(modelDir);
    if (!formats) {
      formats = new Map();
      this.entries.set(modelDir, formats);
    }
    const held = formats.get(format);
    if (held) return held;
    const entry: Entry = {
      format,
      ready: this.load(modelDir, format),
      loaded: null,
      running: 0,
      lastUsed: 0,
    };
    entry.ready.then(
      (loaded) => {
        entry.loaded = loaded;
      },
      // A failed load is retried by the next request instead of being cached.
      () => {
        if (this.entries.get(modelDir)?.get(format) === entry) formats.delete(format);
      },
    );
    formats.set(format, entry);
    return entry;
  }

  private async load(modelDir: string, format: WeightFormat): Promise<Loaded> {
    const started = Date.now();
    const done = (loaded: Loaded, how: string) => {
      const mib = (heldWeightBytes(loaded.weights).matrices / MiB).toFixed(1);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      this.log(`loaded ${modelDir} in ${format} in ${seconds} s (weight matrices ${mib} MiB${how})`);
      return loaded;
    };
    if (format === "fp32") {
      const model = await loadModel(modelDir);
      const served = { generator: createGenerator(model), tokenizer: model.tokenizer };
      return done({ served, fp32: model, weights: model.weights }, "");
    }
    const fp32 = await this.entries
      .get(modelDir)
      ?.get("fp32")
      ?.ready.catch(() => null);
    if (fp32?.fp32) {
      // converted in slices, so the generations already running here keep going meanwhile
      const model = fp32.fp32;
      const weights = await servingWeightsAsync(model.weights, model.config, format);
      const served = {
        generator: createGenerator(model, { servingWeights: weights }),
        tokenizer: model.tokenizer,
      };
      return done({ served, fp32: null, weights }, ", converted from the fp32 copy this process serves");
    }
    const model = await loadServingModel(modelDir, format);
    const served = { generator: createGenerator(model), tokenizer: model.tokenizer };
    return done(
      { served, fp32: null, weights: model.weights },
      ", converted as read from the checkpoint; no fp32 copy held",
    );
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
