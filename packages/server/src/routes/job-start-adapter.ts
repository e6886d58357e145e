// A job that starts from another job's adapter (POST /v1/jobs `startAdapter`,
// an `ft:` model on the OpenAI fine-tuning API): the adapter's weights start
// its LoRA, with a fresh optimizer at step 0 (engine TrainOptions.startAdapter).
// The adapter fixes the LoRA shape, so the job takes its rank, alpha and
// target modules from it and refuses settings that differ; it must train on
// the same base model. The worker finds the adapter's folder again from the
// stored reference (startAdapterDir).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { AdapterRef, JobHyperparameters, Project } from "@svc/wire";
import type { ServerContext } from "../context.js";
import { badRequest } from "../http/api-error.js";
import type { JobRow } from "../store/job-store.js";
import type { Store } from "../store/store.js";

type Lora = JobHyperparameters["lora"];

/** The artifact folder (relative to the data dir) of `ref` in `job`, or null when the job has no such adapter. */
async function adapterArtifactDir(store: Store, job: JobRow, ref: AdapterRef): Promise<string | null> {
  if (ref.kind === "final") {
    const artifact = job.status === "completed" ? await store.jobs.artifact(job.id, "final") : undefined;
    return artifact?.dir ?? null;
  }
  return (await store.jobs.artifact(job.id, `checkpoint-${ref.step}`))?.dir ?? null;
}

/** The adapter's folder on disk, for the worker (null when it has gone since the job was made). */
export async function startAdapterDir(
  ctx: Pick<ServerContext, "store">,
  ref: AdapterRef,
): Promise<string | null> {
  const job = await ctx.store.jobs.get(ref.jobId);
  return job ? adapterArtifactDir(ctx.store, job, ref) : null;
}

/** Whether a raw POST /v1/jobs body sets hyperparameters.lora (the parsed one always has it: DEFAULT_LORA). */
export function setsLora(body: unknown): boolean {
  const hp = (body as { hyperparameters?: { lora?: unknown } } | null)?.hyperparameters;
  return typeof hp === "object" && hp !== null && hp.lora !== undefined;
}

/**
 * Checks `ref` for a new job of `project` on `baseModel` and returns the
 * job's LoRA: the adapter's shape, with `lora.maxLength` kept. `lora` is the
 * caller's when `loraGiven`, and must then match the adapter's.
 */
export async function startAdapterLora(
  ctx: ServerContext,
  project: Project,
  request: {
    ref: AdapterRef;
    baseModel: string;
    lora: Lora;
    loraGiven: boolean;
    field: string;
  },
): Promise<Lora> {
  const { ref, field } = request;
  const job = await ctx.store.jobs.get(ref.jobId);
  if (!job || job.project_id !== project.id)
    throw badRequest(
      `"${field}.jobId": no job ${ref.jobId} in project ${project.orgSlug}/${project.slug}`,
      "adapter_not_found",
    );
  const dir = await adapterArtifactDir(ctx.store, job, ref);
  if (!dir)
    throw badRequest(
      ref.kind === "final"
        ? `"${field}.jobId": job ${job.id} has no final adapter (status ${job.status})`
        : `"${field}.step": job ${job.id} has no checkpoint at step ${ref.step}`,
      "adapter_not_found",
    );
  if (job.base_model !== request.baseModel)
    throw badRequest(
      `"baseModel": job ${job.id}'s adapter was trained on ${job.base_model}; a job that starts from it must use that base model, not ${request.baseModel}`,
      "base_model_mismatch",
    );
  const saved = await adapterShape(ctx.dataDir.abs(dir));
  if (!request.loraGiven)
    return {
      ...saved,
      ...(request.lora.maxLength !== undefined ? { maxLength: request.lora.maxLength } : {}),
    };
  const lora = request.lora;
  const differs = (name: string, given: unknown, has: unknown) =>
    badRequest(
      `"hyperparameters.lora.${name}": ${JSON.stringify(given)} differs from the start adapter's ${JSON.stringify(has)} (${field}); leave it out to take the adapter's`,
    );
  if (lora.r !== saved.r) throw differs("r", lora.r, saved.r);
  if (lora.alpha !== saved.alpha) throw differs("alpha", lora.alpha, saved.alpha);
  const sorted = (names: string[]) => [...names].sort().join();
  if (lora.targetModules && sorted(lora.targetModules) !== sorted(saved.targetModules as string[]))
    throw differs("targetModules", lora.targetModules, saved.targetModules);
  return { ...lora, targetModules: saved.targetModules };
}

/** r, lora_alpha and target_modules of a stored adapter (adapter_config.json as the engine writes it). */
async function adapterShape(dir: string): Promise<Required<Pick<Lora, "r" | "alpha" | "targetModules">>> {
  const config = JSON.parse(await readFile(join(dir, "adapter_config.json"), "utf8")) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };
  return { r: config.r, alpha: config.lora_alpha, targetModules: config.target_modules };
}
