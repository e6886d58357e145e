// OpenAI's models: GET /v1/models (object "list", data: [{ id, object,
// created, owned_by }]: the base models this server serves, and with a scope
// the project's fine-tuned ones; today's `models` field stays for svc's own
// clients), GET /v1/models/{id} and DELETE /v1/models/{ft id}. Deleting an ft:
// model retires its id here (chat completions and this list refuse it); the
// svc job and its adapters stay, for deployments and the Playground.
import { type Context, Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { OpenAiError } from "../../http/openai-error.js";
import type { JobRow } from "../../store/job-store.js";
import { toJob } from "../../store/job-store.js";
import { OpenAiJobStore } from "../../store/openai-job-store.js";
import { modelNameOf, unixSeconds } from "./fine-tuning-job-object.js";
import { checkpointModelId, fineTunedModelId, parseFineTunedModel } from "./openai-ids.js";
import { canSee, optionalProject } from "./openai-scope.js";

interface ModelObject {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

/** A base model's `created`: when this server started (svc records no date for a model folder). */
const SERVER_STARTED = Math.floor(Date.now() / 1000);

const noSuchModel = (id: string) =>
  new OpenAiError(
    404,
    "model_not_found",
    `The model ${id} does not exist or you do not have access to it.`,
    "model",
  );

/** The job and checkpoint step an ft: model id names, when it is a live model the caller may see; else a 404. */
export async function fineTunedModelOr404(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  id: string,
): Promise<{ job: JobRow; step: number | null; ownedBy: string }> {
  const parsed = parseFineTunedModel(id);
  const job = parsed ? await ctx.store.jobs.get(parsed.jobId) : undefined;
  if (
    !parsed ||
    !job ||
    job.status !== "completed" ||
    job.dry_run === 1 ||
    !(await canSee(ctx, c, job.project_id))
  )
    throw noSuchModel(id);
  const store = new OpenAiJobStore(ctx.store.db);
  const orgSlug = await store.orgSlugOf(job.project_id);
  const facts = await store.facts(job.id);
  const name = modelNameOf(toJob(job), orgSlug, facts);
  // The whole id must be the job's own: a wrong base, org or suffix names no model.
  const own = parsed.step === null ? fineTunedModelId(name) : checkpointModelId(name, parsed.step);
  if (own !== id || facts.modelDeleted) throw noSuchModel(id);
  if (parsed.step !== null && !(await ctx.store.jobs.artifact(job.id, `checkpoint-${parsed.step}`)))
    throw noSuchModel(id);
  return { job, step: parsed.step, ownedBy: orgSlug };
}

export function openAiModelRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const store = new OpenAiJobStore(ctx.store.db);

  const baseModel = (name: string): ModelObject => ({
    id: name,
    object: "model",
    created: SERVER_STARTED,
    owned_by: name.includes("/") ? name.slice(0, name.indexOf("/")) : "svc",
  });

  app.get("/v1/models", async (c) => {
    const models = ctx.models.list();
    const data = models.map((m) => baseModel(m.name));
    const project = await optionalProject(ctx, c);
    if (project) {
      const jobs = (await ctx.store.jobs.list(project.id)).filter(
        (job) => job.status === "completed" && !job.dryRun,
      );
      const facts = await store.factsOf(jobs.map((job) => job.id));
      for (const job of jobs) {
        const jobFacts = facts.get(job.id);
        if (!jobFacts || jobFacts.modelDeleted) continue;
        data.push({
          id: fineTunedModelId(modelNameOf(job, project.orgSlug, jobFacts)),
          object: "model",
          created: unixSeconds(job.finishedAt ?? job.createdAt),
          owned_by: project.orgSlug,
        });
      }
    }
    return c.json({ object: "list", data, models });
  });

  // An id holds slashes ("svc/pico-llama"), sent as they are or as %2F.
  app.get("/v1/models/:id{.+}", async (c) => {
    const id = c.req.param("id");
    if (!id.startsWith("ft:")) {
      if (!ctx.models.names().includes(id)) throw noSuchModel(id);
      return c.json(baseModel(id));
    }
    const { job, ownedBy } = await fineTunedModelOr404(ctx, c, id);
    return c.json({
      id,
      object: "model",
      created: unixSeconds(job.finished_at ?? job.created_at),
      owned_by: ownedBy,
    });
  });

  app.delete("/v1/models/:id{.+}", async (c) => {
    const id = c.req.param("id");
    if (!id.startsWith("ft:"))
      throw new OpenAiError(
        403,
        "model_not_deletable",
        `${id} is a base model of this server: only fine-tuned (ft:) models can be deleted`,
        "model",
      );
    const { job, step } = await fineTunedModelOr404(ctx, c, id);
    if (step !== null)
      throw new OpenAiError(
        400,
        "model_not_deletable",
        `${id} is a checkpoint: delete the job's model, ${id.replace(/:ckpt-step-\d+$/, "")}`,
        "model",
      );
    await store.deleteModel(job.id);
    return c.json({ id, object: "model", deleted: true });
  });
  return app;
}
