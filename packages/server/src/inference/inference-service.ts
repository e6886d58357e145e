// Turns what a caller asks to chat with (a base model, a job's final adapter
// or one of its checkpoints) into model and adapter folders, validating that
// they exist; then hands out the shared generator and cached adapter.

import type { Generator, LoraAdapter } from "@svc/engine";
import type { DataDir } from "../data-dir.js";
import { badRequest } from "../http/api-error.js";
import type { ModelRegistry } from "../models/model-registry.js";
import type { JobRow } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import type { AdapterRef } from "../wire.js";
import { EnginePool } from "./engine-pool.js";

export interface ResolvedTarget {
  baseModel: string;
  modelDir: string;
  adapterDir: string | null;
  /** The `model` field of responses. */
  label: string;
}

export class InferenceService {
  readonly pool = new EnginePool();

  constructor(
    private readonly store: Store,
    private readonly models: ModelRegistry,
    private readonly dataDir: DataDir,
  ) {}

  /** `field` names the request field in errors, e.g. "baseModel" or "target.baseModel". */
  baseModel(name: string, field: string): ResolvedTarget {
    const model = this.models.get(name);
    if (!model) {
      const known = this.models.names();
      throw badRequest(
        `"${field}": base model ${JSON.stringify(name)} is not served here (${known.length ? `available: ${known.join(", ")}` : "no base models are registered"})`,
        "unknown_base_model",
      );
    }
    return { baseModel: name, modelDir: model.dir, adapterDir: null, label: name };
  }

  /**
   * An adapter of `job` (already checked to be visible to the caller).
   * `field` names the adapter object in errors, e.g. "adapter" or "target.adapter".
   */
  async adapter(job: JobRow, ref: AdapterRef, field: string): Promise<ResolvedTarget> {
    const base = this.models.get(job.base_model);
    if (!base)
      throw badRequest(
        `"${field}.jobId": the job's base model ${job.base_model} is no longer served here`,
        "unknown_base_model",
      );
    if (ref.kind === "final") {
      const artifact = await this.store.jobs.artifact(job.id, "final");
      if (job.status !== "completed" || !artifact) {
        throw badRequest(
          `"${field}.jobId": job ${job.id} has no final adapter (status ${job.status})`,
          "adapter_not_found",
        );
      }
      return {
        baseModel: job.base_model,
        modelDir: base.dir,
        adapterDir: this.dataDir.abs(artifact.dir),
        label: `${job.base_model}:${job.id}`,
      };
    }
    const artifact = await this.store.jobs.artifact(job.id, `checkpoint-${ref.step}`);
    if (!artifact) {
      throw badRequest(
        `"${field}.step": job ${job.id} has no checkpoint at step ${ref.step}`,
        "adapter_not_found",
      );
    }
    return {
      baseModel: job.base_model,
      modelDir: base.dir,
      adapterDir: this.dataDir.abs(artifact.dir),
      label: `${job.base_model}:${job.id}:checkpoint-${ref.step}`,
    };
  }

  async prepare(target: ResolvedTarget): Promise<{ generator: Generator; adapter: LoraAdapter | null }> {
    const [generator, adapter] = await Promise.all([
      this.pool.generator(target.modelDir),
      target.adapterDir ? this.pool.adapter(target.adapterDir) : null,
    ]);
    return { generator, adapter };
  }
}
