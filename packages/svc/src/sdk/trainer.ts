// createTrainer(): a training run described in code. start() uploads the datasets
// (trainer-upload.ts) and submits the job; wait() follows its events, runs the
// callbacks in order and settles with the job and its artifacts (a GRPO
// trainer's reward functions score the job meanwhile: reward-scorer.ts);
// cancel() stops the job on the backend.
import type { TrainingPrecision } from "@svc/engine";
import {
  type Artifact,
  type Dataset,
  type DatasetProfile,
  DEFAULT_PROFILE_MAX_LENGTH,
  type HubDatasetRequest,
  type HubDatasetSource,
  type Job,
  type JobBackend,
  type JobEvent,
  type TrainingMethod,
} from "@svc/wire";
import { type ApiNotice, apiRecovery, formatApiNotice } from "./api-recovery.js";
import { type CloudApiClient, CloudApiError } from "./client.js";
import { waitForDatasetProfile } from "./dataset-profile.js";
import { bindInfer } from "./infer.js";
import { streamJobEvents } from "./job-event-stream.js";
import {
  assertLoraTargets,
  type BaseModelName,
  type CheckedModelName,
  type HubModelId,
  type SupportedModel,
  servedModel,
} from "./models.js";
import { jobRewards, type ScoringNotice, serveRewards } from "./reward-scorer.js";
import { defaultProjectDir, openScopedSession, type ScopedSvcSession } from "./session.js";
import { trainerRewards } from "./trainer-grpo-options.js";
import {
  hyperparametersOf,
  type TrainerCallbacks,
  type TrainerOptions,
  validateTrainerOptions,
} from "./trainer-options.js";
import { uploadDataset } from "./trainer-upload.js";

export interface TrainerResult {
  job: Job;
  artifacts: Artifact[];
}

export interface WaitOptions {
  /** Sees every event before the callbacks do (the CLI's progress output uses it). */
  onEvent?: (event: JobEvent) => void | Promise<void>;
  signal?: AbortSignal;
  /** Hears each batch the trainer's reward functions scored (method "grpo" with `rewards`). */
  onScored?: (notice: ScoringNotice) => void;
  /**
   * Hears when the cloud API goes away and what is done about it (local server
   * restarted, retry countdown, back). Default: one line each on stderr.
   */
  onApiNotice?: (notice: ApiNotice) => void;
}

/**
 * A Hub dataset start() has the server read (docs/hub.md#datasets): once before
 * the request (no `dataset` yet: the server may be downloading it), once after.
 */
export interface HubDatasetNotice {
  set: "train" | "eval";
  request: HubDatasetRequest;
  dataset?: Dataset;
  source?: HubDatasetSource;
}

export interface StartOverrides {
  /** Overrides the trainer's backend (svc start --backend). */
  backend?: JobBackend;
  /** Overrides the trainer's method (svc start --method). */
  method?: TrainingMethod;
  /** Overrides the trainer's precision (svc start --precision). */
  precision?: TrainingPrecision;
  /** Hears about Hub datasets as they are read (svc start prints them). */
  onHubDataset?: (notice: HubDatasetNotice) => void;
}

export interface Trainer {
  readonly name: string;
  readonly model: BaseModelName;
  /** The submitted job's id; null before start(). */
  readonly jobId: string | null;
  /** Submits the job; `backend` overrides the trainer's (svc start --backend). */
  start(overrides?: StartOverrides): Promise<{ jobId: string }>;
  /**
   * Takes over an earlier job of this trainer instead of submitting one (svc start --attach): wait()
   * follows it and, for a GRPO job, scores it with this trainer's rewards (a job paused because its
   * scorer was gone resumes).
   */
  attach(jobId: string): Promise<{ jobId: string }>;
  /**
   * The training dataset's profile for the trainer's model and maxLength
   * (row and token counts, duplicates, a suggested maxLength), which start()
   * set going at upload: waits up to `timeoutMs` (default 60 s) for it, then
   * resolves with it as it stands. null before start(), from a server
   * without dataset profiles, or for a DPO or GRPO job (the profile describes
   * chat rows; their datasets hold pairs or prompts).
   */
  datasetProfile(options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<DatasetProfile | null>;
  wait(options?: WaitOptions): Promise<TrainerResult>;
  cancel(): Promise<void>;
  /** Pauses the job: it checkpoints and stops, and wait() goes on waiting until it is resumed and ends. */
  pause(): Promise<void>;
  /** Resumes a paused job from its checkpoint. */
  resume(): Promise<void>;
}

/** wait() rejects with this when the job failed (after onFailed ran). */
export class TrainingFailedError extends Error {
  readonly job: Job;
  constructor(job: Job, error: string) {
    super(`training failed: ${error}`);
    this.name = "TrainingFailedError";
    this.job = job;
  }
}

/** wait() rejects with this when the job was cancelled. */
export class TrainingCancelledError extends Error {
  readonly job: Job;
  constructor(job: Job) {
    super(`training job ${job.id} was cancelled`);
    this.name = "TrainingCancelledError";
    this.job = job;
  }
}

/**
 * `model` is checked by type too: a bundled name exactly (a typo there reads
 * "not assignable to type '"svc/pico-llama"'"), or a Hub id outside the `svc`
 * org (CheckedModelName).
 */
export function createTrainer(options: TrainerOptions & { model: SupportedModel }): Trainer;
export function createTrainer<const M extends HubModelId>(
  options: TrainerOptions & { model: M & CheckedModelName<M> },
): Trainer;
export function createTrainer(options: TrainerOptions): Trainer {
  validateTrainerOptions(options);
  return new SvcTrainer({ ...options });
}

class SvcTrainer implements Trainer {
  readonly name: string;
  readonly model: BaseModelName;
  private readonly options: TrainerOptions;
  private session: ScopedSvcSession | null = null;
  private submitted: Promise<{ jobId: string }> | null = null;
  private id: string | null = null;
  private datasetId: string | null = null;
  /** The profile describes chat rows: a DPO or GRPO job's dataset (pairs, prompts) has none. */
  private chatRows = true;

  constructor(options: TrainerOptions) {
    this.options = options;
    this.name = options.name;
    this.model = options.model;
  }

  get jobId(): string | null {
    return this.id;
  }

  start(overrides: StartOverrides = {}): Promise<{ jobId: string }> {
    this.submitted ??= this.submit(
      overrides.backend ?? this.options.backend,
      overrides.method ?? this.options.method,
      overrides.precision ?? this.options.precision,
      overrides.onHubDataset,
    ).catch((err) => {
      this.submitted = null;
      throw err;
    });
    return this.submitted;
  }

  attach(jobId: string): Promise<{ jobId: string }> {
    this.submitted ??= (async () => {
      this.session = await openScopedSession(defaultProjectDir());
      const job = await this.session.scoped.getJob(jobId);
      this.id = job.id;
      this.datasetId = job.datasetId;
      this.chatRows = (job.method ?? "sft") === "sft";
      return { jobId: job.id };
    })().catch((err) => {
      this.submitted = null;
      throw err;
    });
    return this.submitted;
  }

  private async submit(
    backend: JobBackend | undefined,
    method: TrainingMethod | undefined,
    precision: TrainingPrecision | undefined,
    onHubDataset?: (notice: HubDatasetNotice) => void,
  ): Promise<{ jobId: string }> {
    const projectDir = defaultProjectDir();
    this.session = await openScopedSession(projectDir);
    const client = this.session.scoped;
    // The server's model (as its engine reads it) decides, before anything is uploaded.
    // A Hub model the server does not have yet is null here: the server's policy and its config decide at createJob.
    const model = servedModel(await client.listModels(), this.model, "createTrainer: model");
    const targets = this.options.lora?.targetModules;
    if (targets && model) assertLoraTargets(model, targets, "createTrainer: lora.targetModules");
    // Naming the model at upload starts the dataset's profile for it (datasetProfile() reads it).
    this.chatRows = (method ?? "sft") === "sft";
    const profile =
      model && this.chatRows ? { baseModel: this.model, maxLength: this.options.lora?.maxLength } : {};
    const dataset = await uploadDataset(
      client,
      this.options.dataset,
      projectDir,
      `${this.name}-train`,
      profile,
      (n) => onHubDataset?.({ set: "train", ...n }),
    );
    this.datasetId = dataset.id;
    const evalDataset = this.options.evalDataset
      ? await uploadDataset(client, this.options.evalDataset, projectDir, `${this.name}-eval`, {}, (n) =>
          onHubDataset?.({ set: "eval", ...n }),
        )
      : undefined;
    const job = await client.createJob({
      name: this.name,
      baseModel: this.model,
      datasetId: dataset.id,
      evalDatasetId: evalDataset?.id,
      hyperparameters: hyperparametersOf(this.options),
      dryRun: this.options.dryRun,
      ...(backend ? { backend } : {}),
      ...(method ? { method } : {}),
      ...(this.options.graders ? { graders: this.options.graders } : {}),
      ...(this.options.rewards ? { rewards: jobRewards(trainerRewards(this.options)) } : {}),
      ...(this.options.startAdapter ? { startAdapter: this.options.startAdapter } : {}),
      ...(precision ? { precision } : {}),
      ...(this.options.baseWeights ? { baseWeights: this.options.baseWeights } : {}),
    });
    this.id = job.id;
    return { jobId: job.id };
  }

  async datasetProfile(
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<DatasetProfile | null> {
    if (!this.submitted) return null;
    await this.submitted;
    if (!this.datasetId || !this.chatRows) return null;
    try {
      return await waitForDatasetProfile(this.session!.scoped, this.datasetId, {
        baseModel: this.model,
        maxLength: this.options.lora?.maxLength ?? DEFAULT_PROFILE_MAX_LENGTH,
        ...options,
      });
    } catch (err) {
      // A server from before dataset profiles has no such route.
      if (err instanceof CloudApiError && err.status === 404) return null;
      // A Hub model the server had not downloaded when the dataset was uploaded has no profile.
      if (err instanceof CloudApiError && err.code === "unknown_base_model") return null;
      throw err;
    }
  }

  async wait(waitOptions: WaitOptions = {}): Promise<TrainerResult> {
    const { jobId } = await this.start();
    const client = this.session!.scoped;
    const signals = [this.options.abortSignal, waitOptions.signal].filter((s): s is AbortSignal =>
      Boolean(s),
    );
    const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
    const callbacks: TrainerCallbacks = this.options.callbacks ?? {};
    let job = await client.getJob(jobId);
    let outcome:
      | { kind: "completed"; artifacts: Artifact[] }
      | { kind: "failed"; error: string }
      | { kind: "cancelled" }
      | null = null;

    const onApiNotice =
      waitOptions.onApiNotice ?? ((n: ApiNotice) => process.stderr.write(`svc: ${formatApiNotice(n)}\n`));
    const recovery = apiRecovery(onApiNotice);
    // The trainer's reward functions answer the job's scoring batches while it is followed.
    const rewards = trainerRewards(this.options);
    const scoring = new AbortController();
    const serving =
      rewards.length > 0
        ? serveRewards({
            client,
            jobId,
            rewards,
            signal: signal ? AbortSignal.any([signal, scoring.signal]) : scoring.signal,
            onScored: waitOptions.onScored,
          })
        : null;
    try {
      for await (const { event } of streamJobEvents({ client, jobId, signal, recovery })) {
        await waitOptions.onEvent?.(event);
        switch (event.type) {
          case "training.started":
            // Callbacks see the job as it stood at the event: a short run (or a replayed
            // stream) may already be finished on the server by the time we fetch it.
            job = { ...(await client.getJob(jobId)), status: "running", finishedAt: null };
            await callbacks.onStarted?.({ job });
            break;
          case "training.log":
            await callbacks.onLog?.({
              step: event.step,
              loss: event.loss,
              evalLoss: event.evalLoss,
              // Events recorded before the task metrics existed lack them.
              evalTokenAccuracy: event.evalTokenAccuracy ?? null,
              evalExactMatch: event.evalExactMatch ?? null,
              learningRate: event.learningRate,
              epoch: event.epoch,
              job,
            });
            break;
          case "checkpoint.saved":
            await callbacks.onCheckpoint?.({
              step: event.step,
              job,
              infer: bindInfer(client, { adapter: { kind: "checkpoint", jobId, step: event.step } }),
            });
            break;
          case "training.completed":
            job = await client.getJob(jobId);
            outcome = { kind: "completed", artifacts: event.artifacts };
            await callbacks.onCompleted?.({ job, artifacts: event.artifacts });
            break;
          case "training.failed":
            job = await client.getJob(jobId);
            outcome = { kind: "failed", error: event.error };
            await callbacks.onFailed?.({ job, error: event.error });
            break;
          case "training.cancelled":
            job = await client.getJob(jobId);
            outcome = { kind: "cancelled" };
            break;
        }
      }
    } finally {
      scoring.abort();
      await serving;
    }

    signal?.throwIfAborted();
    if (!outcome) outcome = await this.outcomeFromJob(client, jobId, callbacks);
    job = await client.getJob(jobId).catch(() => job);
    if (outcome.kind === "failed") throw new TrainingFailedError(job, outcome.error);
    if (outcome.kind === "cancelled") throw new TrainingCancelledError(job);
    return { job, artifacts: outcome.artifacts };
  }

  /** The stream ended without a terminal event (e.g. events pruned): settle from the job itself. */
  private async outcomeFromJob(client: CloudApiClient, jobId: string, callbacks: TrainerCallbacks) {
    const job = await client.getJob(jobId);
    if (job.status === "completed") {
      const artifacts = await client.listArtifacts(jobId);
      await callbacks.onCompleted?.({ job, artifacts });
      return { kind: "completed" as const, artifacts };
    }
    if (job.status === "cancelled") return { kind: "cancelled" as const };
    const error = job.error ?? `the event stream ended while the job was ${job.status}`;
    if (job.status === "failed") await callbacks.onFailed?.({ job, error });
    return { kind: "failed" as const, error };
  }

  async cancel(): Promise<void> {
    if (!this.submitted) return;
    const { jobId } = await this.submitted;
    await this.session!.scoped.cancelJob(jobId);
  }

  async pause(): Promise<void> {
    if (!this.submitted) return;
    const { jobId } = await this.submitted;
    await this.session!.scoped.pauseJob(jobId);
  }

  async resume(): Promise<void> {
    if (!this.submitted) return;
    const { jobId } = await this.submitted;
    await this.session!.scoped.resumeJob(jobId);
  }
}
