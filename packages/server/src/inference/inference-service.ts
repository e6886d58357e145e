// Turns what a caller asks to chat with (a base model, a job's final adapter
// or one of its checkpoints) into model and adapter folders, validating that
// they exist; generation itself runs in the inference process (InferenceHost).

import type { GenerationChunk, GenerationResult, WeightFormat } from "@svc/engine";
import type { AdapterRef } from "@svc/wire";
import type { DataDir } from "../data-dir.js";
import { badRequest } from "../http/api-error.js";
import { parseHubName } from "../hub/index.js";
import { uncachedHubModel } from "../models/hub-serving.js";
import type { ModelRegistry } from "../models/model-registry.js";
import { refuseTransformersOnlyServing } from "../models/transformers-fallback.js";
import type { JobRow } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import { InferenceHost } from "./inference-host.js";
import type { ChatGeneration, PromptLimits } from "./inference-protocol.js";

export interface ResolvedTarget {
  baseModel: string;
  modelDir: string;
  adapterDir: string | null;
  /** The `model` field of responses. */
  label: string;
  /** The deployment's weight format; null or absent: the server's default. */
  weightFormat?: WeightFormat | null;
  /** An architecture the engine does not implement (given only to a caller that allows it). */
  transformersOnly?: boolean;
}

export interface ResolveOptions {
  /**
   * Resolve a model whose architecture the engine does not implement (or its
   * job's adapter) instead of refusing it: for uses that never load it in the
   * engine (its tokenizer, a PEFT export of the adapter).
   */
  allowTransformersOnly?: boolean;
}

/** A target whose model and adapter are loaded, ready to generate. */
export interface PreparedChat {
  limits: PromptLimits;
  generate(request: ChatGeneration, signal?: AbortSignal): AsyncGenerator<GenerationChunk, GenerationResult>;
  complete(request: ChatGeneration, signal?: AbortSignal): Promise<GenerationResult>;
}

export class InferenceService {
  readonly host = new InferenceHost();

  constructor(
    private readonly store: Store,
    private readonly models: ModelRegistry,
    private readonly dataDir: DataDir,
    /** The weight format of targets that name none (`svc server --weights`). */
    readonly defaultWeightFormat: WeightFormat = "fp32",
  ) {}

  /**
   * `field` names the request field in errors, e.g. "baseModel" or "target.baseModel".
   * A Hub model serves once it is in the cache; with `pull`, one the server's
   * policy lets it download is pulled now and the request answers 409
   * model_downloading (docs/hub.md#serving-a-hub-model).
   */
  baseModel(name: string, field: string, options: { pull?: boolean } & ResolveOptions = {}): ResolvedTarget {
    const model = this.registered(name, field);
    if (!model) {
      if (this.models.isRegistered(name) || !parseHubName(name))
        throw badRequest(this.models.notServedMessage(name, field), "unknown_base_model");
      throw uncachedHubModel(this.models, name, field, options.pull ?? false);
    }
    if (!options.allowTransformersOnly) refuseTransformersOnlyServing(model, field, name);
    return {
      baseModel: name,
      modelDir: model.dir,
      adapterDir: null,
      label: name,
      transformersOnly: model.transformersOnly !== null,
    };
  }

  /** The registry's model, with an unreadable cached Hub config as a 400 naming the field. */
  private registered(name: string, field: string) {
    try {
      return this.models.get(name);
    } catch (error) {
      throw badRequest(`"${field}": ${(error as Error).message}`, "unsupported_model");
    }
  }

  /**
   * An adapter of `job` (already checked to be visible to the caller).
   * `field` names the adapter object in errors, e.g. "adapter" or "target.adapter".
   */
  async adapter(
    job: JobRow,
    ref: AdapterRef,
    field: string,
    options: ResolveOptions = {},
  ): Promise<ResolvedTarget> {
    // A Hub model's adapter runs on the commit it was trained on, wherever the branch has moved since.
    const hub = job.base_model_revision ? parseHubName(job.base_model) : null;
    const base = this.registered(
      hub ? `${hub.repo}@${job.base_model_revision}` : job.base_model,
      `${field}.jobId`,
    );
    if (!base)
      throw badRequest(
        `"${field}.jobId": the job's base model ${job.base_model} is no longer served here`,
        "unknown_base_model",
      );
    if (!options.allowTransformersOnly)
      refuseTransformersOnlyServing(base, `${field}.jobId`, `job ${job.id}'s adapters`);
    const transformersOnly = base.transformersOnly !== null;
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
        transformersOnly,
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
      transformersOnly,
    };
  }

  /**
   * The target's prompt limits and its generation (InferenceHost.prepare says
   * when the model and adapter load; a load error rejects here or at the first result).
   */
  async prepare(target: ResolvedTarget): Promise<PreparedChat> {
    const folders = {
      modelDir: target.modelDir,
      adapterDir: target.adapterDir,
      weightFormat: target.weightFormat ?? this.defaultWeightFormat,
    };
    const limits = await this.host.prepare(folders);
    return {
      limits,
      generate: (request, signal) => this.host.generate(folders, request, signal),
      complete: (request, signal) => this.host.complete(folders, request, signal),
    };
  }

  close(): Promise<void> {
    return this.host.close();
  }
}
