// Wire types of the cloud API (/v1) and the job event stream: defined once here
// and shared by the server, the SDK (packages/svc) and Studio (type-only import).
// This module must stay free of runtime dependencies.

import type { BaseWeightFormat, TrainingPrecision } from "@svc/engine";
import type { DatasetProfileRequest } from "./wire-dataset-profiles.js";
import type { ResponseFormat, ToolCall, ToolCallDelta, ToolChoice, ToolDefinition } from "./wire-tools.js";

export * from "./wire-dataset-profiles.js";
export * from "./wire-deployments.js";
export * from "./wire-exports.js";
export * from "./wire-job-events.js";
export * from "./wire-limits.js";
export * from "./wire-model-pulls.js";
export * from "./wire-project-keys.js";
export * from "./wire-tools.js";

export type Iso8601 = string;

/** Every error body of the cloud API and of Studio's /api. */
export interface ErrorBody {
  error: { message: string; code: string };
}

// ---------------------------------------------------------------- identity

export interface Org {
  id: string;
  slug: string;
  name: string;
}

export interface Project {
  id: string;
  orgId: string;
  orgSlug: string;
  slug: string;
  name: string;
  createdAt: Iso8601;
}

export type IdentityMode = "anonymous" | "oauth";

export interface Me {
  mode: IdentityMode;
  subject: string;
  email: string | null;
  orgs: Org[];
}

/** POST /v1/auth/anonymous → 201 */
export interface AnonymousAuthResponse {
  token: string;
  org: Org;
}

/** Project scope sent as query ?orgSlug=&projectSlug= on scoped routes. */
export interface ProjectScope {
  orgSlug: string;
  projectSlug: string;
}

export interface CreateProjectRequest {
  orgSlug: string;
  slug: string;
  name?: string;
}

// ---------------------------------------------------------------- base models

/** A Hugging Face Hub repo id: `<org>/<name>`, each of letters, digits, "_", "-", "." (not leading), at most 96 characters. */
export const HUB_REPO_ID_PATTERN = /^[A-Za-z0-9][\w.-]{0,95}\/[A-Za-z0-9][\w.-]{0,95}$/;
/**
 * A branch, tag or commit sha after "@" in `<org>/<name>@<revision>`; "refs/pr/1" style names included. As in
 * git ref names: no "..", no empty part ("a//b", a leading or trailing "/"), no part starting with "." ("./x",
 * ".git"); a revision names a file under the cache's refs/, and such parts would name another one.
 */
export const HUB_REVISION_PATTERN = /^(?!.*\.\.)(?!.*\/\/)(?!(?:.*\/)?\.)(?!.*\/$)(?!\/)[\w.\-/]{1,200}$/;

/** The org of svc's bundled models: `svc/<name>` is never looked up on the Hub. */
export const BUNDLED_MODEL_ORG = "svc";

/** Whether `name` is `<org>/<name>[@<revision>]` outside the `svc` org (docs/hub.md). */
export function isHubModelName(name: string): boolean {
  const at = name.indexOf("@");
  const repo = at < 0 ? name : name.slice(0, at);
  return (
    HUB_REPO_ID_PATTERN.test(repo) &&
    !repo.startsWith(`${BUNDLED_MODEL_ORG}/`) &&
    !repo.includes("..") &&
    (at < 0 || HUB_REVISION_PATTERN.test(name.slice(at + 1)))
  );
}

/**
 * BaseModelInfo.family of a model whose architecture the engine does not
 * implement: it trains only on the torch backend with torchModel "transformers"
 * and is never served (docs/gpu-training.md#architectures-svc-does-not-implement).
 */
export const TRANSFORMERS_ONLY_FAMILY = "transformers";

/** A base model as the engine reads its config.json. */
export interface BaseModelInfo {
  /** `<org>/<model>`, e.g. "svc/pico-llama". */
  name: string;
  /**
   * The engine's model family: "llama", "mistral", "qwen2", "qwen3", "gemma3", "phi3", "smollm3", "olmo2" or "granite";
   * "transformers" for an architecture the engine does not implement, which trains only on the torch backend with
   * torchModel "transformers" and is never served (docs/gpu-training.md#architectures-svc-does-not-implement).
   */
  family: string;
  /** config.json's architecture, e.g. "Qwen3ForCausalLM". */
  architecture: string;
  parameters: number;
  /** The most positions the model runs (max_position_embeddings). */
  contextLength: number;
  /** The PEFT module names `hyperparameters.lora.targetModules` may list for this model (or "all-linear" for all of them). */
  loraTargets: string[];
  description: string;
  /** Where the model comes from: the repository's models/ folder, `svc server --model name=dir`, or the Hugging Face Hub (docs/hub.md). */
  source: "bundled" | "local" | "hub";
  /** Whether its files are on this machine (always true for bundled and local models). */
  cached: boolean;
  /** For a Hub model, the commit sha of the cached snapshot; null otherwise. */
  revision: string | null;
  /** Bytes of its files on disk (config, tokenizer, weights); null when not cached. */
  sizeBytes: number | null;
}

// ---------------------------------------------------------------- datasets

export interface Dataset {
  id: string;
  projectId: string;
  name: string;
  rows: number;
  bytes: number;
  createdAt: Iso8601;
}

/**
 * POST /v1/datasets: the JSONL text as the body (Content-Type application/x-ndjson,
 * ?name=&baseModel=&maxLength=), or JSON { url, token?, name?, baseModel?, maxLength? }.
 * Answers { dataset, profile? }: `profile` when a base model was named (wire-dataset-profiles.ts).
 */
export interface CreateDatasetFromUrlRequest extends DatasetProfileRequest {
  url: string;
  token?: string;
  name?: string;
}

/** A Hugging Face Hub dataset split (docs/hub.md#datasets). */
export interface HubDatasetRequest {
  /** The dataset's Hub id, `org/name`. */
  name: string;
  split: string;
  /** A config: a top-level folder of the dataset's files. */
  config?: string;
  /** Branch, tag or commit sha; "main" when left out. */
  revision?: string;
  /** Which columns make the rows, when they are not named messages, prompt/completion or instruction/input/output. */
  columns?: HubColumnMapping;
}

/** An explicit mapping: the row shape's fields, each naming a column of the dataset. */
export interface HubColumnMapping {
  messages?: string;
  prompt?: string;
  completion?: string;
  instruction?: string;
  input?: string;
  output?: string;
  system?: string;
}

/**
 * POST /v1/datasets with JSON { huggingface, name?, baseModel?, maxLength? }:
 * the split is fetched into the Hugging Face cache, converted and checked like
 * an upload. Answers { dataset, source, profile? }.
 */
export interface CreateDatasetFromHubRequest extends DatasetProfileRequest {
  huggingface: HubDatasetRequest;
  name?: string;
}

/** Where a Hub dataset's rows came from: the answer's `source`. */
export interface HubDatasetSource {
  type: "huggingface";
  name: string;
  split: string;
  config: string | null;
  /** The commit sha the files were read at. */
  revision: string;
  /** The split's files, in the order their rows were read. */
  files: string[];
  shape: "messages" | "prompt_completion" | "alpaca";
  /** The shape's fields and the columns they were read from. */
  columns: Record<string, string>;
  /** Columns of the files no row was made from (ids, metadata, ...). */
  ignoredColumns: string[];
  /** True when no file had to be fetched. */
  fromCache: boolean;
}

// ---------------------------------------------------------------- jobs

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
  /**
   * Method "grpo": the job's graders as the request's top-level `graders` gave them; they are stored
   * with the hyperparameters and read back here (not accepted inside a request's hyperparameters).
   */
  graders?: JobGrader[];
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

export interface Artifact {
  /** "final", "checkpoint-<step>" or "tensorboard" (the job's TensorBoard event file, docs/tensorboard.md). */
  name: string;
  kind: "final" | "checkpoint" | "tensorboard";
  /** The adapter's step; for "tensorboard", the last step the file holds. */
  step: number;
  files: { path: string; bytes: number }[];
  createdAt: Iso8601;
}

// ---------------------------------------------------------------- inference

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  /** null (or absent) for an assistant message that only calls tools. */
  content: string | null;
  /** Assistant messages: the tools it called. */
  tool_calls?: ToolCall[];
  /** Tool messages: the call this result answers. */
  tool_call_id?: string;
  name?: string;
}

export type AdapterRef =
  | { kind: "final"; jobId: string }
  | { kind: "checkpoint"; jobId: string; step: number };

/** POST /v1/inference/chat */
export interface InferArgs {
  messages: ChatMessage[];
  adapter?: AdapterRef;
  baseModel?: string;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string | string[];
  seed?: number;
  stream?: boolean;
  /** Functions the model may call (docs/tools.md). */
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  /** Several calls in one answer (default true). */
  parallelToolCalls?: boolean;
  /** JSON output enforced by constrained decoding (docs/tools.md#structured-output). */
  responseFormat?: ResponseFormat;
  /** Completions sampled together, 1 to 16 (docs/api.md#chat-parameters). */
  n?: number;
  /** Each token's logprob, with topLogprobs (0 to 20) alternatives. */
  logprobs?: boolean;
  topLogprobs?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** Token id → bias in [-100, 100]. */
  logitBias?: Record<string, number>;
}

/** One token of OpenAI's logprobs.content (docs/api.md#logprobs). */
export interface ChatTopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}
export interface ChatTokenLogprob extends ChatTopLogprob {
  top_logprobs: ChatTopLogprob[];
}
/** A choice's logprobs: null where the request did not ask for them. */
export type ChatLogprobs = { content: ChatTokenLogprob[]; refusal: null } | null;

/** Why a generation ended: "tool_calls" when the answer calls tools. */
export type ChatFinishReason = "stop" | "length" | "tool_calls";

/** OpenAI chat.completion object (the subset we produce). */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: "assistant"; content: string | null; tool_calls?: ToolCall[] };
    finish_reason: ChatFinishReason;
    logprobs?: ChatLogprobs;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** OpenAI chat.completion.chunk object (the subset we produce). */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string | null; tool_calls?: ToolCallDelta[] };
    finish_reason: ChatFinishReason | null;
    logprobs?: ChatLogprobs;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

// ---------------------------------------------------------------- slug rules (shared by server validation and UI hints)

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]*[a-z0-9]$/;
export const SLUG_MIN_LENGTH = 2;
export const SLUG_MAX_LENGTH = 50;
export const KEY_LABEL_MAX_LENGTH = 80;

export const RESERVED_SLUGS: readonly string[] = [
  "www",
  "api",
  "admin",
  "app",
  "auth",
  "login",
  "dashboard",
  "console",
  "studio",
  "docs",
  "status",
  "mail",
  "static",
  "cdn",
  "edge",
  "internal",
  "root",
  "svc",
];
