// Jobs: POST /v1/jobs, GET /v1/jobs (newest first), GET /v1/jobs/:id,
// POST /v1/jobs/:id/cancel.
import { DEFAULT_JOB_PRECISION, plannedSteps } from "@svc/engine";
import {
  type Answer,
  BASE_WEIGHT_FORMATS,
  type BaseModelInfo,
  DEFAULT_LORA,
  EVAL_FRACTION_RANGE,
  GRPO_HYPERPARAMETERS,
  hyperparameterRanges,
  JOB_BACKENDS,
  type Job,
  type JobHyperparameters,
  type JobLimits,
  LR_SCHEDULER_TYPES,
  PREFERENCE_HYPERPARAMETERS,
  PREFERENCE_LOSSES,
  type Project,
  TORCH_MODELS,
  TRAINING_METHODS,
  TRAINING_PRECISIONS,
  TRUNCATION_MODES,
  type TrainingMethod,
} from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { engineHyperparameters } from "../engine-hyperparameters.js";
import { badRequest, conflict, quoteInput } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { storedDatasetFormat } from "../http/dataset-validation.js";
import {
  array,
  boolean,
  type Check,
  inRange,
  object,
  oneOf,
  optional,
  parseBody,
  string,
} from "../http/validate.js";
import { nowIso, UUID_PATTERN, uuidv7 } from "../ids.js";
import { checkJobBaseModel } from "../models/job-base-model.js";
import { type JobRow, toJob } from "../store/job-store.js";
import { withQueuedReasons } from "../store/worker-store.js";
import { jobOr404, projectFromQuery } from "./access.js";
import { adapterRefCheck } from "./inference.js";
import { checkGradersOnDataset, checkRewardNames, jobGradersCheck, jobRewardsCheck } from "./job-grpo.js";
import { checkJobJudges } from "./job-judges.js";
import { setsLora, startAdapterLora } from "./job-start-adapter.js";

/** hyperparameters, ranged by @svc/wire's limits.ts under this server's job limits; a missing `lora` is DEFAULT_LORA (as documented). */
function hyperparametersCheck(limits: JobLimits): Check<JobHyperparameters> {
  const range = hyperparameterRanges(limits);
  const lora = object({
    r: inRange(range.lora.r),
    alpha: inRange(range.lora.alpha),
    // Names are checked against the base model's once it is known (checkTargetModules): its family's,
    // or for an architecture the engine does not implement, its weights' (transformers-only-model.ts).
    targetModules: optional(array(string({ min: 1, max: 100 }), { min: 1, max: 64 })),
    maxLength: optional(inRange(range.lora.maxLength)),
  });
  const check = object({
    lora: optional(lora),
    maxSteps: optional(inRange(range.maxSteps)),
    numTrainEpochs: optional(inRange(range.numTrainEpochs)),
    learningRate: optional(inRange(range.learningRate)),
    batchSize: optional(inRange(range.batchSize)),
    gradientAccumulationSteps: optional(inRange(range.gradientAccumulationSteps)),
    lrSchedulerType: optional(oneOf(LR_SCHEDULER_TYPES)),
    warmupSteps: optional(inRange(range.warmupSteps)),
    weightDecay: optional(inRange(range.weightDecay)),
    evalSteps: optional(inRange(range.evalSteps)),
    saveSteps: optional(inRange(range.saveSteps)),
    seed: optional(inRange(range.seed)),
    truncation: optional(oneOf(TRUNCATION_MODES)),
    exactMatchMaxTokens: optional(inRange(range.exactMatchMaxTokens)),
    exactMatchSamples: optional(inRange(range.exactMatchSamples)),
    torchModel: optional(oneOf(TORCH_MODELS)),
    loss: optional(oneOf(PREFERENCE_LOSSES)),
    beta: optional(inRange(range.beta)),
    labelSmoothing: optional(inRange(range.labelSmoothing)),
    gamma: optional(inRange(range.gamma)),
    numGenerations: optional(inRange(range.numGenerations)),
    temperature: optional(inRange(range.temperature)),
    topP: optional(inRange(range.topP)),
    maxCompletionTokens: optional(inRange(range.maxCompletionTokens)),
    epsilon: optional(inRange(range.epsilon)),
    scaleRewards: optional(boolean()),
    evalGenerations: optional(inRange(range.evalGenerations)),
  });
  return (value, path) => {
    const parsed = check(value, path);
    return { ...parsed, lora: parsed.lora ?? { ...DEFAULT_LORA } };
  };
}

/**
 * hyperparameters.lora.targetModules against the base model's LoRA targets
 * (BaseModelInfo.loraTargets): PEFT names the model has, or "all-linear" alone
 * (the shape was checked before).
 */
function checkTargetModules(targets: string[], model: BaseModelInfo): void {
  const field = "hyperparameters.lora.targetModules";
  const valid = `${model.loraTargets.map((t) => JSON.stringify(t)).join(", ")}, or "all-linear" alone`;
  targets.forEach((target, i) => {
    if (target === "all-linear" && targets.length > 1)
      throw badRequest(`"${field}[${i}]": "all-linear" means every module and cannot be listed with others`);
    if (target !== "all-linear" && !model.loraTargets.includes(target))
      throw badRequest(
        `"${field}[${i}]": ${quoteInput(target)} is not a LoRA target of ${model.name} (${model.architecture}); valid: ${valid}`,
      );
  });
}

const uuid = () => string({ pattern: UUID_PATTERN, patternText: "a UUID" });

export const createJobBody = (limits: JobLimits) =>
  object({
    name: string({ min: 1, max: 200 }),
    baseModel: string({ min: 1, max: 200 }),
    datasetId: uuid(),
    evalDatasetId: optional(uuid()),
    evalFraction: optional(inRange(EVAL_FRACTION_RANGE)),
    hyperparameters: optional(hyperparametersCheck(limits)),
    method: optional(oneOf(TRAINING_METHODS)),
    graders: optional(jobGradersCheck),
    rewards: optional(jobRewardsCheck),
    dryRun: optional(boolean()),
    backend: optional(oneOf(JOB_BACKENDS)),
    startAdapter: optional(adapterRefCheck),
    // The engine's values (train-precision.ts): one source of truth.
    precision: optional(oneOf(TRAINING_PRECISIONS)),
    baseWeights: optional(oneOf(BASE_WEIGHT_FORMATS)),
  });

/** A POST /v1/jobs body as createJobBody parsed it. */
export type CreateJobRequest = ReturnType<ReturnType<typeof createJobBody>> & {
  /** Whether the caller set hyperparameters.lora (job-start-adapter.ts setsLora); else it is DEFAULT_LORA. */
  loraGiven?: boolean;
};

/**
 * Checks a parsed job request against the server (base model, LoRA targets,
 * datasets of `project`, step bound) and queues the job: the one way a job is
 * made, for /v1/jobs and the OpenAI fine-tuning API alike.
 */
export async function createJob(ctx: ServerContext, project: Project, body: CreateJobRequest): Promise<Job> {
  const baseModel = await checkJobBaseModel(
    ctx.models,
    body.baseModel,
    body.hyperparameters ?? { lora: { ...DEFAULT_LORA } },
    body.backend ?? "auto",
  );
  const targetModules = body.hyperparameters?.lora.targetModules;
  if (targetModules) checkTargetModules(targetModules, baseModel);
  if (body.hyperparameters?.torchModel === "transformers" && body.backend !== "torch")
    throw badRequest(
      `"hyperparameters.torchModel": "transformers" builds the model on the torch backend only: set "backend": "torch"`,
    );
  if (body.evalDatasetId && body.evalFraction !== undefined)
    throw badRequest(`"evalFraction" cannot be combined with "evalDatasetId"`);
  const method = body.method ?? "sft";
  checkMethod(method, body);
  // Both backends train every precision and an int8 base (docs/training-precision.md#the-torch-backend), so
  // those leave a job's backend as asked. A GRPO job left at "auto" is the engine's: the torch backend's
  // sampling has no constrained decoding (a row's response_format), so it trains GRPO only when asked to
  // (docs/post-training.md#backends).
  const engineOnly = method === "grpo";
  // transformers + peft hold the base as transformers loads it (bf16 or fp32): the int8 base is svc's decoder's.
  if (body.baseWeights !== undefined && body.hyperparameters?.torchModel === "transformers")
    throw badRequest(
      `"baseWeights": "int8" trains svc's decoder on the torch backend; "hyperparameters.torchModel": "transformers" trains on a bf16 or fp32 base (leave one of them out)`,
    );
  let hyperparameters: JobHyperparameters = body.hyperparameters ?? { lora: { ...DEFAULT_LORA } };
  if (body.startAdapter) {
    const lora = await startAdapterLora(ctx, project, {
      ref: body.startAdapter,
      baseModel: body.baseModel,
      lora: hyperparameters.lora,
      loraGiven: body.loraGiven ?? false,
      field: "startAdapter",
    });
    hyperparameters = { ...hyperparameters, lora };
  }
  let trainRows = 0;
  for (const field of ["datasetId", "evalDatasetId"] as const) {
    const id = body[field];
    if (id === undefined) continue;
    const dataset = await ctx.store.datasets.get(id);
    if (!dataset || dataset.project_id !== project.id)
      throw badRequest(
        `"${field}": no dataset ${id} in project ${project.orgSlug}/${project.slug}`,
        "dataset_not_found",
      );
    if (field === "datasetId") trainRows = dataset.rows;
    const format = await storedDatasetFormat(ctx.dataDir.abs(dataset.path));
    const wants = method === "dpo" ? "preference" : method === "grpo" ? "prompts" : "sft";
    if (format !== wants) throw badRequest(datasetMismatch(field, id, format, method), "invalid_dataset");
    if (method === "grpo" && body.graders)
      await checkGradersOnDataset(body.graders, ctx.dataDir.abs(dataset.path));
  }
  if (method === "grpo" && body.graders) await checkJobJudges(ctx, project, body.graders);
  // Without maxSteps, epochs × batches decide the length: bound that too (all rows: an eval split only shortens it).
  const steps = plannedSteps(trainRows, engineHyperparameters(hyperparameters));
  if (steps > ctx.jobLimits.maxSteps)
    throw badRequest(
      `"hyperparameters.numTrainEpochs" makes this job train ${steps} steps over the dataset's ${trainRows} rows; this server allows at most ${ctx.jobLimits.maxSteps} (svc server --max-job-steps): lower numTrainEpochs or set maxSteps`,
    );
  const job = await ctx.store.jobs.insert({
    id: uuidv7(),
    project_id: project.id,
    name: body.name,
    status: "queued",
    base_model: body.baseModel,
    base_model_revision: null,
    dataset_id: body.datasetId,
    eval_dataset_id: body.evalDatasetId ?? null,
    eval_fraction: body.evalFraction ?? null,
    // The method rides in the stored hyperparameters (no column: jobs before methods are "sft"); toJob lifts it out.
    // So do the start adapter and the precision (toJob lifts them out too); the precision is always stored,
    // as jobs made before precisions existed (none stored) trained in fp32.
    hyperparameters: JSON.stringify({
      ...hyperparameters,
      ...(method === "sft" ? {} : { method }),
      ...(body.graders ? { graders: body.graders } : {}),
      ...(body.rewards ? { rewards: body.rewards } : {}),
      ...(body.startAdapter ? { startAdapter: body.startAdapter } : {}),
      precision: body.precision ?? DEFAULT_JOB_PRECISION,
      ...(body.baseWeights ? { baseWeights: body.baseWeights } : {}),
    }),
    dry_run: body.dryRun ? 1 : 0,
    error: null,
    created_at: nowIso(),
    started_at: null,
    finished_at: null,
    cancel_requested: 0,
    lease_owner: null,
    lease_expires_at: null,
    resume_from: null,
    attempts: 0,
    // GRPO is the engine's unless the torch backend is asked for, so a torch worker never claims it.
    backend: body.backend === "torch" ? "torch" : engineOnly ? "engine" : (body.backend ?? "auto"),
  });
  ctx.wakeWorkers();
  return (await withQueuedReasons(ctx.store.db, [job]))[0];
}

/** The method's rules across fields: its hyperparameters only with it, and the backends that train it. */
function checkMethod(method: TrainingMethod, body: CreateJobRequest): void {
  const hp = body.hyperparameters;
  if (method !== "grpo") {
    const stray = GRPO_HYPERPARAMETERS.find((key) => hp?.[key] !== undefined);
    if (stray)
      throw badRequest(`"hyperparameters.${stray}" is a GRPO setting: set "method": "grpo" to use it`);
    if (body.graders) throw badRequest(`"graders" reward a GRPO job: set "method": "grpo" to use them`);
    if (body.rewards) throw badRequest(`"rewards" reward a GRPO job: set "method": "grpo" to use them`);
  }
  if (method === "sft") {
    const stray = PREFERENCE_HYPERPARAMETERS.find((key) => hp?.[key] !== undefined);
    if (stray)
      throw badRequest(
        `"hyperparameters.${stray}" is a preference-tuning setting: set "method": "dpo" to use it`,
      );
    return;
  }
  if (method === "grpo") {
    const stray = PREFERENCE_HYPERPARAMETERS.find((key) => key !== "beta" && hp?.[key] !== undefined);
    if (stray)
      throw badRequest(`"hyperparameters.${stray}" is a DPO setting: method "grpo" does not read it`);
    if (!body.graders && !body.rewards)
      throw badRequest(
        `"graders": method "grpo" needs at least one grader or trainer reward ("rewards") to reward its completions (docs/post-training.md#grpo)`,
      );
    if (body.rewards) checkRewardNames(body.rewards, body.graders);
    // GRPO's eval set is a prompts dataset of its own; the train prompts are not split (docs/post-training.md#grpo-eval)
    if (body.evalFraction !== undefined)
      throw badRequest(
        `"evalFraction": method "grpo" takes its eval set as "evalDatasetId", a prompts dataset of its own`,
      );
    if (hp?.evalGenerations !== undefined && !body.evalDatasetId)
      throw badRequest(`"hyperparameters.evalGenerations" samples the eval set: give "evalDatasetId" too`);
    return;
  }
  // GRPO's beta may be 0 (no KL term); DPO's must be positive: the same field, a narrower range.
  if (hp?.beta !== undefined) inRange(hyperparameterRanges().dpoBeta)(hp.beta, "hyperparameters.beta");
  if (hp?.gamma !== undefined && hp.loss !== "simpo")
    throw badRequest(`"hyperparameters.gamma" is SimPO's margin: it needs "hyperparameters.loss": "simpo"`);
}

/** Why a dataset does not fit the job's method, naming the field. */
function datasetMismatch(field: string, id: string, format: string, method: TrainingMethod): string {
  const holds =
    { preference: "preference pairs", prompts: "GRPO prompts", sft: "chat rows" }[format] ?? format;
  if (method === "sft" || format === "preference") {
    const fits = format === "preference" ? "dpo" : "grpo";
    return `"${field}": dataset ${id} holds ${holds}; train it with "method": "${fits}" (docs/post-training.md)`;
  }
  const wants = method === "dpo" ? "preference pairs" : "prompts (messages ending before the answer)";
  return `"${field}": method "${method}" trains on ${wants}, and dataset ${id} holds ${holds} (docs/post-training.md#datasets)`;
}

/** Cancels a job that has not finished (a queued one at once, a running one at its next step). */
export async function cancelJob(ctx: ServerContext, job: JobRow): Promise<Job> {
  if (job.status === "completed" || job.status === "failed" || job.status === "cancelled")
    throw conflict(`job ${job.id} has already finished (${job.status})`, "job_finished");
  const after = await ctx.store.jobs.requestCancel(job.id);
  ctx.cancelRunning(job.id);
  return toJob(after ?? job);
}

export function jobRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const createBody = createJobBody(ctx.jobLimits);

  app.post("/v1/jobs", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const raw = await readJson(c);
    const job = await createJob(ctx, project, { ...parseBody(createBody, raw), loraGiven: setsLora(raw) });
    return c.json({ job } satisfies Answer<"createJob">, 201);
  });

  app.get("/v1/jobs", async (c) => {
    const project = await projectFromQuery(ctx, c);
    return c.json({
      jobs: await withQueuedReasons(ctx.store.db, await ctx.store.jobs.list(project.id)),
    } satisfies Answer<"listJobs">);
  });

  app.get("/v1/jobs/:id", async (c) => {
    const job = toJob(await jobOr404(ctx, c, c.req.param("id")));
    return c.json({ job: (await withQueuedReasons(ctx.store.db, [job]))[0] } satisfies Answer<"getJob">);
  });

  app.post("/v1/jobs/:id/cancel", async (c) => {
    return c.json({
      job: await cancelJob(ctx, await jobOr404(ctx, c, c.req.param("id"))),
    } satisfies Answer<"cancelJob">);
  });
  return app;
}
