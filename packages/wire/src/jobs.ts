// Wire types of fine-tuning jobs (/v1/jobs) and their hyperparameters.

import type { AdapterRef, Iso8601 } from "./common.js";
import type { BaseWeightFormat, TrainingPrecision } from "./precision.js";
import type { JobReward } from "./scoring.js";

/** "paused": stopped at a checkpoint by POST /v1/jobs/:id/pause, not claimed until resumed (docs/api.md#pause-and-resume). */
export type JobStatus = "queued" | "running" | "paused" | "completed" | "failed" | "cancelled";

export const LR_SCHEDULER_TYPES = ["linear", "cosine", "constant"] as const;
export type LrSchedulerType = (typeof LR_SCHEDULER_TYPES)[number];

/** What happens to a row over lora.maxLength (docs/datasets.md#truncation); the default is "keep_answers". */
export const TRUNCATION_MODES = ["keep_answers", "end", "strict"] as const;
export type TruncationMode = (typeof TRUNCATION_MODES)[number];

/** hyperparameters.lora of a job whose request leaves the LoRA settings out. */
export const DEFAULT_LORA = { r: 8, alpha: 16 } as const;

export interface JobHyperparameters {
  lora: { r: number; alpha: number; targetModules?: string[]; maxLength?: number };
  maxSteps?: number;
  numTrainEpochs?: number;
  learningRate?: number;
  batchSize?: number;
  gradientAccumulationSteps?: number;
  lrSchedulerType?: LrSchedulerType;
  warmupSteps?: number;
  weightDecay?: number;
  evalSteps?: number;
  saveSteps?: number;
  seed?: number;
  truncation?: TruncationMode;
  /** Exact match runs when the eval set's answers fit in this many tokens (default 32; 0 = off; docs/api.md#task-metrics). */
  exactMatchMaxTokens?: number;
  /** Eval rows exact match generates for, the same sample at every eval (default 32; 0 = off). */
  exactMatchSamples?: number;
  /**
   * What builds the model on the torch backend (docs/gpu-training.md): "svc" (default), svc's own
   * decoder; "transformers", transformers + peft (needs "backend": "torch").
   */
  torchModel?: TorchModel;
  /** DPO (method "dpo", docs/post-training.md): "sigmoid" (DPO's loss, default) or "simpo" (reference-free). */
  loss?: PreferenceLoss;
  /** DPO's β: how far the adapter may move from the reference (default 0.1; 2.0 for simpo). */
  beta?: number;
  /** The share ε ∈ [0, 0.5] of preference pairs taken as mislabelled (conservative DPO; default 0). */
  labelSmoothing?: number;
  /** SimPO's target reward margin γ (default 0.5); only with loss "simpo". */
  gamma?: number;
  /** GRPO (method "grpo", docs/post-training.md#grpo): completions sampled per prompt, the group (default 8). */
  numGenerations?: number;
  /** GRPO: the sampling temperature (default 1) and nucleus topP (default 1). */
  temperature?: number;
  topP?: number;
  /** GRPO: the most tokens of one sampled completion (default 64). */
  maxCompletionTokens?: number;
  /** GRPO: the ratio's clip ε (default 0.2). beta is GRPO's KL weight to the reference (default 0; 0 allowed). */
  epsilon?: number;
  /** GRPO: divide each advantage by its group's reward standard deviation (default true). */
  scaleRewards?: boolean;
  /** GRPO with an eval set: completions sampled per eval prompt at each eval (default 1; docs/post-training.md#grpo-eval). */
  evalGenerations?: number;
  /**
   * Method "grpo": the job's graders as the request's top-level `graders` gave them; they are stored
   * with the hyperparameters and read back here (not accepted inside a request's hyperparameters).
   */
  graders?: JobGrader[];
  /**
   * Method "grpo": the rewards the job's trainer computes (createTrainer's `rewards`: names and weights,
   * never code), stored and read back as the request's top-level `rewards` gave them (scoring.ts).
   */
  rewards?: JobReward[];
}

/** How a job trains (docs/post-training.md): supervised fine-tuning on chat rows, or preference tuning on pairs. */
export type TrainingMethod = "sft" | "dpo" | "grpo";
export const TRAINING_METHODS: readonly TrainingMethod[] = ["sft", "dpo", "grpo"];
/** The preference losses of method "dpo" (hyperparameters.loss). */
export type PreferenceLoss = "sigmoid" | "simpo";
export const PREFERENCE_LOSSES: readonly PreferenceLoss[] = ["sigmoid", "simpo"];
/** The hyperparameters only method "dpo" reads (a "sft" job naming one is refused). */
export const PREFERENCE_HYPERPARAMETERS = ["loss", "beta", "labelSmoothing", "gamma"] as const;
/** The hyperparameters only method "grpo" reads (beta too, as its KL weight). */
export const GRPO_HYPERPARAMETERS = [
  "numGenerations",
  "temperature",
  "topP",
  "maxCompletionTokens",
  "epsilon",
  "scaleRewards",
  "evalGenerations",
] as const;

/** One reward of a GRPO job: an OpenAI grader object (docs/graders.md) and its weight in the sum (default 1). */
export interface JobGrader {
  grader: Record<string, unknown>;
  weight?: number;
}

/** The torch backend's model implementation (hyperparameters.torchModel). */
export type TorchModel = "svc" | "transformers";
export const TORCH_MODELS: readonly TorchModel[] = ["svc", "transformers"];

export interface CreateJobRequest {
  name: string;
  baseModel: string;
  datasetId: string;
  evalDatasetId?: string;
  /** Fraction (0, 0.5] of the training set held out for eval when no eval dataset is given. */
  evalFraction?: number;
  /** A missing `lora` is DEFAULT_LORA, or the start adapter's shape for a job with startAdapter. */
  hyperparameters?: Omit<JobHyperparameters, "lora"> & Partial<Pick<JobHyperparameters, "lora">>;
  /** "sft" (default) trains on chat rows; "dpo" on preference pairs; "grpo" on prompts with graders (docs/post-training.md). */
  method?: TrainingMethod;
  /** Method "grpo": the rewards, graders run by the server (docs/post-training.md#grpo). */
  graders?: JobGrader[];
  /**
   * Method "grpo": rewards the job's trainer computes in its own process and answers through the scoring
   * routes (docs/post-training.md#rewards-in-typescript). A GRPO job needs graders, rewards or both.
   */
  rewards?: JobReward[];
  /** Validate everything and run the data pipeline without training. */
  dryRun?: boolean;
  /** Which training backend runs the job (docs/gpu-training.md); default "auto": any worker's. */
  backend?: JobBackend;
  /**
   * Start from this adapter of an earlier job on the same base model (its weights, a fresh optimizer, step 0);
   * the LoRA shape is the adapter's (docs/api.md#starting-from-an-adapter).
   */
  startAdapter?: AdapterRef;
  /**
   * The training precision (docs/training-precision.md): "fp32", "bf16", or "auto" (default: bf16 where the
   * CPU has native bf16 dot products, else fp32).
   */
  precision?: TrainingPrecision;
  /** "int8": hold the frozen base weights in int8 (QLoRA-style memory); omitted: in the precision's format. */
  baseWeights?: BaseWeightFormat;
}

/** A job's training backend: the engine (CPU), PyTorch (svc worker --backend torch), or any. */
export type JobBackend = "auto" | "engine" | "torch";
export const JOB_BACKENDS: readonly JobBackend[] = ["auto", "engine", "torch"];

export interface Job {
  id: string;
  projectId: string;
  name: string;
  status: JobStatus;
  baseModel: string;
  /** The commit sha a Hub base model resolved to (set once its files are on the worker; docs/hub.md); null for bundled and local models. */
  baseModelRevision: string | null;
  datasetId: string;
  evalDatasetId: string | null;
  hyperparameters: JobHyperparameters;
  /** How the job trains: "sft", "dpo" or "grpo" (jobs made before methods existed: "sft"). */
  method: TrainingMethod;
  /** The adapter the job started from (CreateJobRequest.startAdapter); null: a fresh LoRA. */
  startAdapter: AdapterRef | null;
  /**
   * The precision the job asked for (CreateJobRequest.precision; jobs made before precisions existed: "fp32").
   * What ran ("auto" resolved) is on its training.started event.
   */
  precision: TrainingPrecision;
  /** CreateJobRequest.baseWeights; null: the base weights are held in the precision's format. */
  baseWeights: BaseWeightFormat | null;
  dryRun: boolean;
  backend: JobBackend;
  /** Why a queued job waits: no running worker offers its backend; null when it will be claimed. */
  queuedReason: string | null;
  /**
   * Why svc paused the job itself: "scorer_gone" (SCORER_GONE_REASON) when its trainer's scorer stopped
   * claiming; null for a user's pause and for a job that is not paused.
   */
  pausedReason: string | null;
  /**
   * The job's attempt, 1-based. A crash of the process that ran it (its
   * training process, its server or worker) restarts it as the next attempt:
   * from its last checkpoint, or from step 0 when it had none (docs/server.md).
   */
  attempt: number;
  /** Why the attempt before this one ended, when the job was restarted after a crash; else null. */
  restartedAfter: string | null;
  error: string | null;
  createdAt: Iso8601;
  startedAt: Iso8601 | null;
  finishedAt: Iso8601 | null;
}
