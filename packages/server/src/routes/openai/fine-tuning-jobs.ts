// OpenAI's fine-tuning jobs: POST /v1/fine_tuning/jobs, GET /v1/fine_tuning/jobs
// (after, limit, metadata[k]=v), GET …/{id}, POST …/{id}/cancel, …/pause,
// …/resume. A fine-tuning job is an svc job, made by createJob as POST /v1/jobs
// makes one; every svc job of the project is listed, however it was made.
import { randomInt } from "node:crypto";
import { type AdapterRef, type Job, type JobLimits, type Project, SEED_RANGE } from "@svc/wire";
import { type Context, Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { ApiError } from "../../http/api-error.js";
import { readJson } from "../../http/body.js";
import { noSuch, OpenAiError, refuseParam } from "../../http/openai-error.js";
import { inRange, nullable, object, optional, parseBody, string } from "../../http/validate.js";
import { metadataCheck } from "../../inference/chat-params.js";
import type { JobRow } from "../../store/job-store.js";
import { toJob } from "../../store/job-store.js";
import { OpenAiJobStore } from "../../store/openai-job-store.js";
import { pauseJob, resumeJob } from "../job-pause.js";
import { cancelJob, createJob, createJobBody } from "../jobs.js";
import { fineTuningJobObject } from "./fine-tuning-job-object.js";
import { fileRefusal, hyperparametersCheck, methodCheck, svcTraining } from "./fine-tuning-method.js";
import { trainedTokensOf } from "./fine-tuning-step-logs.js";
import { fineTunedModelOr404 } from "./models.js";
import { datasetIdOf, jobIdOf } from "./openai-ids.js";
import { checkQuery, limitQuery, metadataFilters, pageAfter } from "./openai-list.js";
import { canSee, scopedProject } from "./openai-scope.js";

const SUFFIX = /^[A-Za-z0-9._-]+$/;

const createBody = (limits: JobLimits) =>
  object({
    model: string({ min: 1, max: 300 }),
    training_file: string({ min: 1, max: 200 }),
    validation_file: nullable(optional(string({ min: 1, max: 200 }))),
    suffix: nullable(
      optional(
        string({ min: 1, max: 64, pattern: SUFFIX, patternText: "letters, digits, '.', '_' and '-'" }),
      ),
    ),
    seed: nullable(optional(inRange(SEED_RANGE))),
    metadata: nullable(optional(metadataCheck)),
    method: optional(methodCheck(limits)),
    hyperparameters: optional(object(hyperparametersCheck(limits))),
    integrations: nullable(
      optional((value: unknown, path: string) => {
        if (Array.isArray(value) && value.length === 0) return value;
        throw refuseParam(
          path,
          `"${path}": svc has no integrations (Weights & Biases); send [] or leave it out`,
        );
      }),
    ),
  });

/** svc's field names in createJob's refusals, and the request's field each came from. */
function openAiParams(hyperparametersPath: string): [string, string][] {
  return [
    ["baseModel", "model"],
    ["startAdapter", "model"],
    ["datasetId", "training_file"],
    ["evalDatasetId", "validation_file"],
    ["hyperparameters.numTrainEpochs", `${hyperparametersPath}.n_epochs`],
    ["hyperparameters.batchSize", `${hyperparametersPath}.batch_size`],
    ["hyperparameters.learningRate", `${hyperparametersPath}.learning_rate_multiplier`],
    ["hyperparameters.beta", `${hyperparametersPath}.beta`],
    ["hyperparameters.numGenerations", `${hyperparametersPath}.compute_multiplier`],
    ["hyperparameters.evalSteps", `${hyperparametersPath}.eval_interval`],
    ["hyperparameters.evalGenerations", `${hyperparametersPath}.eval_samples`],
    // a reinforcement job's one grader (its fields named whole: param is the refusal's leading path)
    ["graders[0].grader", "method.reinforcement.grader"],
  ];
}

/** The base model and adapter an ft: model names (400 model_not_available when it names none the caller may see). */
async function startingModel(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  model: string,
): Promise<{ baseModel: string; adapter: AdapterRef }> {
  try {
    const { job, step } = await fineTunedModelOr404(ctx, c, model);
    return {
      baseModel: job.base_model,
      adapter: step === null ? { kind: "final", jobId: job.id } : { kind: "checkpoint", jobId: job.id, step },
    };
  } catch (error) {
    if (!(error instanceof OpenAiError)) throw error;
    throw refuseParam(
      "model",
      `Model ${model} is not available for fine-tuning or does not exist.`,
      "model_not_available",
    );
  }
}

/** A refusal of createJob's, naming the OpenAI request's field instead of svc's. */
function inOpenAiTerms(error: unknown, hyperparametersPath: string): unknown {
  if (!(error instanceof ApiError) || error.status !== 400) return error;
  for (const [svc, openAi] of openAiParams(hyperparametersPath)) {
    if (!error.message.startsWith(`"${svc}`)) continue;
    const message = error.message.replace(`"${svc}`, `"${openAi}`);
    if (svc.startsWith("graders")) return new ApiError(400, error.code, message);
    return fileRefusal(error.code, message, openAi);
  }
  return error;
}

export function fineTuningJobRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const facts = new OpenAiJobStore(ctx.store.db);
  const body = createBody(ctx.jobLimits);
  const svcBody = createJobBody(ctx.jobLimits);

  const datasetOf = async (project: Project, field: string, id: string) => {
    const datasetId = datasetIdOf(id);
    const dataset = datasetId ? await ctx.store.datasets.get(datasetId) : undefined;
    if (!dataset || dataset.project_id !== project.id)
      throw refuseParam(
        field,
        `invalid ${field}: no file ${id} in project ${project.orgSlug}/${project.slug}`,
        `invalid_${field}`,
      );
    return dataset;
  };

  const objectOf = async (job: Job) =>
    fineTuningJobObject(
      job,
      await facts.orgSlugOf(job.projectId),
      await facts.facts(job.id),
      job.status === "completed" ? await trainedTokensOf(ctx, job.id) : null,
    );

  app.post("/v1/fine_tuning/jobs", async (c) => {
    const project = await scopedProject(ctx, c);
    const request = parseBody(body, await readJson(c));
    // An ft: model continues from that job's final adapter, or a checkpoint's (:ckpt-step-N).
    const start = request.model.startsWith("ft:") ? await startingModel(ctx, c, request.model) : null;
    if (request.method && request.hyperparameters)
      throw refuseParam(
        "hyperparameters",
        `"hyperparameters" (legacy) and "method" cannot both be given; send method.supervised.hyperparameters`,
      );
    const train = await datasetOf(project, "training_file", request.training_file);
    const validation = request.validation_file
      ? await datasetOf(project, "validation_file", request.validation_file)
      : undefined;
    const method = request.method ?? { type: "supervised", hyperparameters: request.hyperparameters ?? {} };
    const hpPath = request.hyperparameters ? "hyperparameters" : `method.${method.type}.hyperparameters`;
    const seed = request.seed ?? randomInt(0, (SEED_RANGE.max as number) + 1);
    let job: Job;
    try {
      // svc's checks of the request (a grader's score_model refusal among them) are renamed too
      const svcRequest = parseBody(svcBody, {
        name: request.suffix ?? "fine-tuning job",
        baseModel: start?.baseModel ?? request.model,
        ...(start ? { startAdapter: start.adapter } : {}),
        datasetId: train.id,
        ...(validation ? { evalDatasetId: validation.id } : {}),
        ...svcTraining(method, seed, train.rows, validation !== undefined, ctx.jobLimits),
      });
      job = await createJob(ctx, project, svcRequest);
    } catch (error) {
      throw inOpenAiTerms(error, hpPath);
    }
    await facts.insert(job.id, request.suffix ?? null, request.metadata ?? null);
    return c.json(await objectOf(job), 200);
  });

  app.get("/v1/fine_tuning/jobs", async (c) => {
    checkQuery(c, ["after", "limit"], true);
    const project = await scopedProject(ctx, c);
    const limit = limitQuery(c, 100, 20);
    const jobs = await ctx.store.jobs.list(project.id);
    const all = await facts.factsOf(jobs.map((job) => job.id));
    const orgSlug = await facts.orgSlugOf(project.id);
    const filters = metadataFilters(c);
    const objects = jobs
      .filter((job) => filters.every(([key, value]) => all.get(job.id)?.metadata?.[key] === value))
      .map((job) =>
        fineTuningJobObject(
          job,
          orgSlug,
          all.get(job.id) ?? { suffix: null, metadata: null, modelDeleted: false },
        ),
      );
    const page = pageAfter(objects, c.req.query("after"), limit);
    // trained tokens are summed from a job's steps: only for the page's succeeded jobs
    for (const object of page.data)
      if (object.status === "succeeded")
        object.trained_tokens = await trainedTokensOf(ctx, jobIdOf(object.id) ?? object.id);
    return c.json({ object: "list", ...page });
  });

  app.get("/v1/fine_tuning/jobs/:id", async (c) => {
    return c.json(await objectOf(toJob(await fineTuningJobOr404(ctx, c, c.req.param("id")))));
  });

  app.post("/v1/fine_tuning/jobs/:id/cancel", async (c) => {
    return c.json(await objectOf(await cancelJob(ctx, await fineTuningJobOr404(ctx, c, c.req.param("id")))));
  });

  app.post("/v1/fine_tuning/jobs/:id/pause", async (c) => {
    return c.json(await objectOf(await pauseJob(ctx, await fineTuningJobOr404(ctx, c, c.req.param("id")))));
  });

  app.post("/v1/fine_tuning/jobs/:id/resume", async (c) => {
    return c.json(await objectOf(await resumeJob(ctx, await fineTuningJobOr404(ctx, c, c.req.param("id")))));
  });
  return app;
}

/** The job a fine-tuning job id names, when the caller may see it; else OpenAI's 404. */
export async function fineTuningJobOr404(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  id: string,
): Promise<JobRow> {
  const jobId = jobIdOf(id);
  const job = jobId ? await ctx.store.jobs.get(jobId) : undefined;
  if (!job || !(await canSee(ctx, c, job.project_id)))
    throw noSuch("fine-tuning job", id, "fine_tuning_job_id");
  return job;
}
