// createTrainer's options: their types, and the checks that make a bad value
// fail at construction with the field's name.
import {
  type AdapterRef,
  type Artifact,
  allowedValues,
  BASE_WEIGHT_FORMATS,
  type BaseWeightFormat,
  type ChatMessage,
  type CreateJobRequest,
  DEFAULT_LORA,
  describeRange,
  GRPO_HYPERPARAMETERS,
  type HubDatasetRequest,
  hyperparameterRanges,
  isInRange,
  JOB_BACKENDS,
  type Job,
  type JobBackend,
  type JobHyperparameters,
  LR_SCHEDULER_TYPES,
  MAX_STORED_INTEGER,
  type NumericRange,
  PREFERENCE_HYPERPARAMETERS,
  PREFERENCE_LOSSES,
  TORCH_MODELS,
  type ToolDefinition,
  TRAINING_METHODS,
  TRAINING_PRECISIONS,
  TRUNCATION_MODES,
  type TrainingMethod,
  type TrainingPrecision,
} from "@svc/wire";
import type { BoundInfer } from "./infer.js";
import { assertSupportedModel, type BaseModelName } from "./models.js";
import { type GrpoTrainerOptions, validateGrpo } from "./trainer-grpo-options.js";

export interface ChatExample {
  messages: ChatMessage[];
  /** Functions the conversation's tool calls use (docs/tools.md#datasets-with-tools). */
  tools?: ToolDefinition[];
  parallel_tool_calls?: boolean;
}

/** A preference pair (method "dpo"), in OpenAI's form or TRL's (docs/post-training.md#datasets). */
export type PreferenceExample =
  | {
      input: { messages: ChatMessage[]; tools?: ToolDefinition[] };
      preferred_output: ChatMessage[];
      non_preferred_output: ChatMessage[];
    }
  | { prompt: ChatMessage[] | string; chosen: ChatMessage[] | string; rejected: ChatMessage[] | string };

export type DatasetSource =
  | { type: "file"; path: string }
  | { type: "url"; url: string; token?: string }
  | { type: "inline"; rows: ChatExample[] | PreferenceExample[] }
  /** A Hub dataset's split (docs/hub.md#datasets): Parquet or JSONL files, read by the server. */
  | ({ type: "huggingface" } & HubDatasetRequest);

export interface TrainerCallbacks {
  onStarted?(info: { job: Job }): void | Promise<void>;
  onLog?(info: {
    step: number;
    loss: number | null;
    evalLoss: number | null;
    /** Task metrics of the eval pass (fractions; null when not computed at this step): docs/sdk.md. */
    evalTokenAccuracy: number | null;
    evalExactMatch: number | null;
    learningRate: number | null;
    epoch: number | null;
    job: Job;
  }): void | Promise<void>;
  /** infer chats with the checkpoint that was just saved. */
  onCheckpoint?(info: { step: number; job: Job; infer: BoundInfer }): void | Promise<void>;
  onCompleted?(info: { job: Job; artifacts: Artifact[] }): void | Promise<void>;
  onFailed?(info: { job: Job; error: string }): void | Promise<void>;
}

/** The job hyperparameters a trainer takes as they are (maxSteps, learningRate, seed, ...). */
type TrainerHyperparameters = Omit<
  JobHyperparameters,
  "lora" | "gradientAccumulationSteps" | "graders" | "rewards"
>;

export interface TrainerOptions extends TrainerHyperparameters, GrpoTrainerOptions {
  name: string;
  /** A bundled model ("svc/pico-llama") or a Hugging Face Hub id, "<org>/<name>[@<revision>]" (docs/hub.md). */
  model: BaseModelName;
  dataset: DatasetSource;
  evalDataset?: DatasetSource;
  /**
   * targetModules: PEFT module names of the model's family (`loraTargets` in
   * GET /v1/models: "q_proj" … "down_proj", Phi-3's "qkv_proj", "gate_up_proj", …)
   * or ["all-linear"], the default; checked against the server's model at start().
   */
  lora?: JobHyperparameters["lora"];
  /**
   * "sft" (default): supervised fine-tuning on chat rows; "dpo": preference
   * tuning on pairs, with beta, labelSmoothing, loss and gamma; "grpo": reinforcement
   * on prompts with `rewards` and/or `graders` (docs/post-training.md).
   */
  method?: TrainingMethod;
  dryRun?: boolean;
  /**
   * The training backend (docs/gpu-training.md): "auto" (default, any worker),
   * "engine" (svc's CPU engine) or "torch" (PyTorch: svc worker --backend torch).
   */
  backend?: JobBackend;
  /**
   * Start from an earlier job's adapter on the same base model: `{ kind: "final", jobId }` or
   * `{ kind: "checkpoint", jobId, step }` (docs/api.md#starting-from-an-adapter). Its LoRA shape is the job's.
   */
  startAdapter?: AdapterRef;
  /**
   * The training precision (docs/training-precision.md): "auto" (the server's default: bf16 where the CPU has
   * native bf16 dot products, else fp32), "fp32" or "bf16".
   */
  precision?: TrainingPrecision;
  /** "int8": hold the frozen base weights in int8 (QLoRA-style memory); omitted: in the precision's format. */
  baseWeights?: BaseWeightFormat;
  callbacks?: TrainerCallbacks;
  /** Stops only the local wait(); the job keeps running (use cancel() to stop it). */
  abortSignal?: AbortSignal;
}

export function fail(field: string, expected: string, value: unknown): never {
  throw new TypeError(
    `createTrainer: ${field}: expected ${expected}, got ${JSON.stringify(value) ?? String(value)}`,
  );
}

/**
 * The job hyperparameters' ranges (the wire's, as POST /v1/jobs checks them).
 * Steps and batchSize are bounded by the server's operator (svc server
 * --max-job-steps, --max-batch-size), up to the largest stored integer: the
 * SDK checks that bound and leaves the server's own to the server.
 */
const RANGES = hyperparameterRanges({ maxSteps: MAX_STORED_INTEGER, batchSize: MAX_STORED_INTEGER });

const HUB_DATASET_KEYS = ["type", "name", "split", "config", "revision", "columns"];
const HUB_COLUMN_KEYS = ["messages", "prompt", "completion", "instruction", "input", "output", "system"];

function validateHubDataset(field: string, ds: Record<string, unknown>): void {
  for (const key of Object.keys(ds))
    if (!HUB_DATASET_KEYS.includes(key))
      fail(`${field}.${key}`, `one of ${HUB_DATASET_KEYS.join(", ")}`, key);
  if (typeof ds.name !== "string" || !/^[\w.-]+\/[\w.-]+$/.test(ds.name))
    fail(`${field}.name`, 'a Hub dataset id "org/name"', ds.name);
  if (typeof ds.split !== "string" || ds.split === "")
    fail(`${field}.split`, 'a split name, e.g. "train"', ds.split);
  for (const key of ["config", "revision"] as const)
    if (ds[key] !== undefined && (typeof ds[key] !== "string" || ds[key] === ""))
      fail(`${field}.${key}`, "a non-empty string", ds[key]);
  if (ds.columns === undefined) return;
  if (typeof ds.columns !== "object" || ds.columns === null || Array.isArray(ds.columns))
    fail(
      `${field}.columns`,
      "{ messages } | { prompt, completion } | { instruction, input?, output } (column names)",
      ds.columns,
    );
  for (const [key, column] of Object.entries(ds.columns)) {
    if (!HUB_COLUMN_KEYS.includes(key))
      fail(`${field}.columns.${key}`, `one of ${HUB_COLUMN_KEYS.join(", ")}`, key);
    if (typeof column !== "string" || column === "") fail(`${field}.columns.${key}`, "a column name", column);
  }
}

/** The API's range (@svc/wire limits.ts), checked before anything is sent. */
export function withinRange(field: string, v: unknown, range: NumericRange): void {
  if (v !== undefined && !isInRange(range, v)) fail(field, describeRange(range), v);
}

const isPreferencePair = (row: Record<string, unknown>) =>
  ("input" in row && "preferred_output" in row && "non_preferred_output" in row) ||
  ("prompt" in row && "chosen" in row && "rejected" in row);

function validateDataset(field: string, d: unknown, method: TrainingMethod = "sft"): void {
  const ds = d as Record<string, unknown> | undefined;
  if (!ds || typeof ds !== "object")
    fail(field, '{ type: "file" | "url" | "inline" | "huggingface", ... }', d);
  if (ds.type === "file") {
    if (typeof ds.path !== "string" || ds.path === "")
      fail(`${field}.path`, "a path to a JSONL file", ds.path);
  } else if (ds.type === "url") {
    if (typeof ds.url !== "string" || !/^https?:\/\//.test(ds.url))
      fail(`${field}.url`, "an http(s) URL", ds.url);
    if (ds.token !== undefined && typeof ds.token !== "string") fail(`${field}.token`, "a string", ds.token);
  } else if (ds.type === "inline") {
    if (!Array.isArray(ds.rows) || ds.rows.length === 0)
      fail(`${field}.rows`, "a non-empty array of { messages }", ds.rows);
    ds.rows.forEach((row: unknown, i: number) => {
      // The rows' content is checked by the server as an uploaded file's (errors name the row's line).
      if (method === "dpo") {
        if (typeof row !== "object" || row === null || !isPreferencePair(row as Record<string, unknown>))
          fail(
            `${field}.rows[${i}]`,
            '{ input, preferred_output, non_preferred_output } or { prompt, chosen, rejected } (method "dpo")',
            row,
          );
        return;
      }
      const messages = (row as { messages?: unknown })?.messages;
      if (!Array.isArray(messages) || messages.length === 0)
        fail(`${field}.rows[${i}].messages`, "a non-empty array", messages);
    });
  } else if (ds.type === "huggingface") {
    validateHubDataset(field, ds);
  } else {
    fail(`${field}.type`, '"file", "url", "inline" or "huggingface"', ds.type);
  }
}

export function validateTrainerOptions(o: TrainerOptions): void {
  if (!o || typeof o !== "object") fail("options", "an object", o);
  if (typeof o.name !== "string" || o.name.trim() === "" || o.name.length > 200)
    fail("name", "a non-empty string", o.name);
  assertSupportedModel(o.model, "createTrainer: model");
  if (o.method !== undefined && !TRAINING_METHODS.includes(o.method))
    fail("method", allowedValues(TRAINING_METHODS), o.method);
  validateDataset("dataset", o.dataset, o.method);
  if (o.evalDataset !== undefined) validateDataset("evalDataset", o.evalDataset, o.method);
  validatePreference(o);
  validateGrpo(o);
  if (o.lora !== undefined) {
    if (typeof o.lora !== "object" || o.lora === null)
      fail("lora", "{ r, alpha, targetModules?, maxLength? }", o.lora);
    const lora = RANGES.lora;
    if (o.lora.r === undefined) fail("lora.r", describeRange(lora.r), o.lora.r);
    withinRange("lora.r", o.lora.r, lora.r);
    if (o.lora.alpha === undefined) fail("lora.alpha", describeRange(lora.alpha), o.lora.alpha);
    withinRange("lora.alpha", o.lora.alpha, lora.alpha);
    withinRange("lora.maxLength", o.lora.maxLength, lora.maxLength);
    const targets: unknown = o.lora.targetModules;
    if (
      targets !== undefined &&
      (!Array.isArray(targets) ||
        targets.length === 0 ||
        targets.some((t) => typeof t !== "string" || t === ""))
    )
      fail(
        "lora.targetModules",
        'a non-empty array of module names (e.g. ["q_proj", "v_proj"]) or ["all-linear"]',
        targets,
      );
  }
  for (const key of [
    "maxSteps",
    "numTrainEpochs",
    "learningRate",
    "batchSize",
    "warmupSteps",
    "weightDecay",
    "evalSteps",
    "saveSteps",
    "seed",
    "exactMatchMaxTokens",
    "exactMatchSamples",
  ] as const)
    withinRange(key, o[key], RANGES[key]);
  if (o.lrSchedulerType !== undefined && !LR_SCHEDULER_TYPES.includes(o.lrSchedulerType)) {
    fail("lrSchedulerType", allowedValues(LR_SCHEDULER_TYPES), o.lrSchedulerType);
  }
  if (o.truncation !== undefined && !TRUNCATION_MODES.includes(o.truncation)) {
    fail("truncation", allowedValues(TRUNCATION_MODES), o.truncation);
  }
  if (o.torchModel !== undefined && !TORCH_MODELS.includes(o.torchModel))
    fail("torchModel", allowedValues(TORCH_MODELS), o.torchModel);
  if (o.dryRun !== undefined && typeof o.dryRun !== "boolean") fail("dryRun", "a boolean", o.dryRun);
  if (o.backend !== undefined && !JOB_BACKENDS.includes(o.backend))
    fail("backend", allowedValues(JOB_BACKENDS), o.backend);
  if (o.startAdapter !== undefined) validateStartAdapter(o.startAdapter);
  // The engine's values, as POST /v1/jobs checks them.
  if (o.precision !== undefined && !TRAINING_PRECISIONS.includes(o.precision))
    fail("precision", allowedValues(TRAINING_PRECISIONS), o.precision);
  if (o.baseWeights !== undefined && !BASE_WEIGHT_FORMATS.includes(o.baseWeights))
    fail("baseWeights", `${allowedValues(BASE_WEIGHT_FORMATS)} or omitted`, o.baseWeights);
  if (o.callbacks !== undefined) {
    if (typeof o.callbacks !== "object" || o.callbacks === null)
      fail("callbacks", "an object of functions", o.callbacks);
    for (const [k, v] of Object.entries(o.callbacks)) {
      if (!["onStarted", "onLog", "onCheckpoint", "onCompleted", "onFailed"].includes(k))
        fail(`callbacks.${k}`, "a known callback name", k);
      if (v !== undefined && typeof v !== "function") fail(`callbacks.${k}`, "a function", v);
    }
  }
  if (o.abortSignal !== undefined && !(o.abortSignal instanceof AbortSignal))
    fail("abortSignal", "an AbortSignal", "?");
}

/** DPO's settings: in their ranges, only with method "dpo", gamma only with loss "simpo" (as POST /v1/jobs). */
function validatePreference(o: TrainerOptions): void {
  if (o.method !== "dpo") {
    // beta is GRPO's KL weight too (validateGrpo checks it there)
    const stray = PREFERENCE_HYPERPARAMETERS.find(
      (key) => o[key] !== undefined && !(key === "beta" && o.method === "grpo"),
    );
    if (stray) fail(stray, 'to be left out unless method is "dpo"', o[stray]);
    return;
  }
  const range = RANGES;
  if (o.loss !== undefined && !PREFERENCE_LOSSES.includes(o.loss))
    fail("loss", allowedValues(PREFERENCE_LOSSES), o.loss);
  withinRange("beta", o.beta, range.dpoBeta);
  withinRange("labelSmoothing", o.labelSmoothing, range.labelSmoothing);
  withinRange("gamma", o.gamma, range.gamma);
  if (o.gamma !== undefined && o.loss !== "simpo") fail("gamma", 'to be set only with loss "simpo"', o.gamma);
}

function validateStartAdapter(ref: AdapterRef): void {
  const kinds = '{ kind: "final", jobId } or { kind: "checkpoint", jobId, step }';
  if (typeof ref !== "object" || ref === null || (ref.kind !== "final" && ref.kind !== "checkpoint"))
    fail("startAdapter", kinds, ref);
  if (typeof ref.jobId !== "string" || ref.jobId === "") fail("startAdapter.jobId", "a job id", ref.jobId);
  if (ref.kind === "checkpoint" && !(Number.isInteger(ref.step) && ref.step >= 1))
    fail("startAdapter.step", "a checkpoint's step (an integer ≥ 1)", ref.step);
}

export function hyperparametersOf(o: TrainerOptions): NonNullable<CreateJobRequest["hyperparameters"]> {
  // From an adapter without `lora`, the job takes the adapter's shape: DEFAULT_LORA would ask for another.
  const h = o.startAdapter && !o.lora ? {} : { lora: { ...DEFAULT_LORA, ...o.lora } };
  const keys: readonly (keyof TrainerHyperparameters)[] = [
    "maxSteps",
    "numTrainEpochs",
    "learningRate",
    "batchSize",
    "lrSchedulerType",
    "warmupSteps",
    "weightDecay",
    "evalSteps",
    "saveSteps",
    "seed",
    "truncation",
    "exactMatchMaxTokens",
    "exactMatchSamples",
    "torchModel",
    ...PREFERENCE_HYPERPARAMETERS,
    ...GRPO_HYPERPARAMETERS,
  ];
  for (const k of keys) if (o[k] !== undefined) (h as unknown as Record<string, unknown>)[k] = o[k];
  return h;
}
