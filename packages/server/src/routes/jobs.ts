// Jobs: POST /v1/jobs, GET /v1/jobs (newest first), GET /v1/jobs/:id,
// POST /v1/jobs/:id/cancel.
import { ALL_LORA_TARGETS } from "@svc/engine";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, conflict } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { array, boolean, number, object, oneOf, optional, parseBody, string } from "../http/validate.js";
import { nowIso, UUID_PATTERN, uuidv7 } from "../ids.js";
import { toJob } from "../store/job-store.js";
import { DEFAULT_LORA, type JobHyperparameters, LR_SCHEDULER_TYPES } from "../wire.js";
import { jobOr404, projectFromQuery } from "./access.js";

const posInt = () => number({ integer: true, positive: true });

const hyperparametersCheck = object({
  lora: object({
    r: number({ integer: true, positive: true, max: 1024 }),
    alpha: number({ positive: true }),
    targetModules: optional(array(oneOf(ALL_LORA_TARGETS), { min: 1 })),
    maxLength: optional(posInt()),
  }),
  maxSteps: optional(posInt()),
  numTrainEpochs: optional(number({ positive: true })),
  learningRate: optional(number({ positive: true })),
  batchSize: optional(posInt()),
  gradientAccumulationSteps: optional(posInt()),
  lrSchedulerType: optional(oneOf(LR_SCHEDULER_TYPES)),
  warmupSteps: optional(number({ integer: true, min: 0 })),
  weightDecay: optional(number({ min: 0 })),
  evalSteps: optional(posInt()),
  saveSteps: optional(posInt()),
  seed: optional(number({ integer: true, min: 0 })),
});

const uuid = () => string({ pattern: UUID_PATTERN, patternText: "a UUID" });

const createJobBody = object({
  name: string({ min: 1, max: 200 }),
  baseModel: string({ min: 1, max: 200 }),
  datasetId: uuid(),
  evalDatasetId: optional(uuid()),
  evalFraction: optional(number({ exclusiveMin: 0, max: 0.5 })),
  hyperparameters: optional(hyperparametersCheck),
  dryRun: optional(boolean()),
});

export function jobRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();

  app.post("/v1/jobs", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const body = parseBody(createJobBody, await readJson(c));
    ctx.inference.baseModel(body.baseModel, "baseModel");
    if (body.evalDatasetId && body.evalFraction !== undefined)
      throw badRequest(`"evalFraction" cannot be combined with "evalDatasetId"`);
    for (const field of ["datasetId", "evalDatasetId"] as const) {
      const id = body[field];
      if (id === undefined) continue;
      const dataset = await ctx.store.datasets.get(id);
      if (!dataset || dataset.project_id !== project.id)
        throw badRequest(
          `"${field}": no dataset ${id} in project ${project.orgSlug}/${project.slug}`,
          "dataset_not_found",
        );
    }
    const hyperparameters: JobHyperparameters = body.hyperparameters ?? { lora: { ...DEFAULT_LORA } };
    const job = await ctx.store.jobs.insert({
      id: uuidv7(),
      project_id: project.id,
      name: body.name,
      status: "queued",
      base_model: body.baseModel,
      dataset_id: body.datasetId,
      eval_dataset_id: body.evalDatasetId ?? null,
      eval_fraction: body.evalFraction ?? null,
      hyperparameters: JSON.stringify(hyperparameters),
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
    });
    ctx.wakeWorkers();
    return c.json({ job }, 201);
  });

  app.get("/v1/jobs", async (c) => {
    const project = await projectFromQuery(ctx, c);
    return c.json({ jobs: await ctx.store.jobs.list(project.id) });
  });

  app.get("/v1/jobs/:id", async (c) => c.json({ job: toJob(await jobOr404(ctx, c, c.req.param("id"))) }));

  app.post("/v1/jobs/:id/cancel", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    if (job.status === "completed" || job.status === "failed" || job.status === "cancelled")
      throw conflict(`job ${job.id} has already finished (${job.status})`, "job_finished");
    const after = await ctx.store.jobs.requestCancel(job.id);
    ctx.cancelRunning(job.id);
    return c.json({ job: toJob(after ?? job) });
  });
  return app;
}
