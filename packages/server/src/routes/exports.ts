// Exports: POST /v1/exports starts writing a job's adapter (final or a
// checkpoint) or a base model as a PEFT folder, a merged Hugging Face folder,
// or a GGUF file with an Ollama Modelfile (engine export/) and answers 202;
// GET /v1/exports/:id says how it stands (running with its progress, ready
// with its files, or failed with the reason), GET /v1/exports/:id/:file
// downloads a file of a ready export, DELETE removes it.
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import { checkExportOptions, type EngineError, EXPORT_FORMATS } from "@svc/engine";
import type { Answer, ExportInfo } from "@svc/wire";
import type { Context } from "hono";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { type ExportRunner, MAX_PENDING_EXPORTS } from "../exports/export-runner.js";
import { ApiError, badRequest, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { object, oneOf, optional, parseBody, string } from "../http/validate.js";
import { projectFromQuery, visibleJob } from "./access.js";
import { adapterRefCheck } from "./inference.js";

const exportBody = object({
  adapter: optional(adapterRefCheck),
  baseModel: optional(string({ min: 1, max: 300 })),
  format: oneOf(EXPORT_FORMATS),
  quant: optional(string({ min: 1, max: 16 })),
});

/** Exports one org may have running or queued in a process: the queue is shared, and no org may take all of it. */
export const MAX_PENDING_EXPORTS_PER_ORG = MAX_PENDING_EXPORTS / 2;

async function exportOr404(
  ctx: ServerContext,
  runner: ExportRunner,
  c: Context<ApiEnv>,
): Promise<ExportInfo> {
  const info = runner.get(c.req.param("id") ?? "");
  const orgId = info ? await ctx.store.projects.orgIdOf(info.projectId) : undefined;
  if (!info || orgId === undefined || !(await ctx.store.identity.isMember(c.get("user").id, orgId))) {
    throw notFound(`export ${c.req.param("id")}`);
  }
  return info;
}

export function exportRoutes(ctx: ServerContext, runner: ExportRunner) {
  const app = new Hono<ApiEnv>();
  /** The exports each org started in this process that may still be running or queued. */
  const startedByOrg = new Map<string, Set<string>>();
  const pendingOf = (orgId: string): Set<string> => {
    const ids = startedByOrg.get(orgId) ?? new Set<string>();
    for (const id of ids) if (!runner.isPending(id)) ids.delete(id);
    if (ids.size === 0) startedByOrg.delete(orgId);
    return ids;
  };
  app.post("/v1/exports", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const body = parseBody(exportBody, await readJson(c));
    if (body.adapter && body.baseModel) throw badRequest(`"adapter" and "baseModel" cannot both be given`);
    if (!body.adapter && !body.baseModel) throw badRequest(`"adapter" or "baseModel" is required`);
    let quant: string | null;
    try {
      quant = checkExportOptions(body.format, body.quant, Boolean(body.adapter));
    } catch (error) {
      const e = error as EngineError;
      throw badRequest(`"${e.file}": ${e.message}`, "invalid_export");
    }
    let target: {
      modelDir: string;
      adapterDir: string | null;
      baseModel: string;
      transformersOnly?: boolean;
    };
    let jobId: string | null = null;
    if (body.adapter) {
      const job = await visibleJob(ctx, c, body.adapter.jobId);
      if (!job || job.project_id !== project.id) throw notFound(`job ${body.adapter.jobId}`);
      // a PEFT export is the adapter folder alone: also for an architecture the engine does not implement
      target = await ctx.inference.adapter(job, body.adapter, "adapter", {
        allowTransformersOnly: body.format === "peft",
      });
      jobId = job.id;
    } else {
      target = ctx.inference.baseModel(body.baseModel as string, "baseModel");
    }
    // checked and recorded with no await in between, so concurrent requests cannot both pass
    const pending = pendingOf(project.orgId);
    if (pending.size >= MAX_PENDING_EXPORTS_PER_ORG)
      throw new ApiError(
        429,
        "too_many_exports",
        `org ${project.orgSlug} has ${pending.size} exports running or queued on this server (at most ${MAX_PENDING_EXPORTS_PER_ORG}); try again when one has finished`,
      );
    const info = runner.start({
      projectId: project.id,
      format: body.format,
      quant,
      jobId,
      step: body.adapter?.kind === "checkpoint" ? body.adapter.step : null,
      baseModel: target.baseModel,
      modelDir: target.modelDir,
      adapterDir: target.adapterDir,
      transformersOnly: target.transformersOnly === true,
    });
    startedByOrg.set(project.orgId, pending.add(info.id));
    return c.json({ export: info } satisfies Answer<"createExport">, 202);
  });
  app.get("/v1/exports/:id", async (c) =>
    c.json({ export: await exportOr404(ctx, runner, c) } satisfies Answer<"getExport">),
  );
  app.delete("/v1/exports/:id", async (c) => {
    const info = await exportOr404(ctx, runner, c);
    runner.remove(info.id);
    return c.json({ export: info } satisfies Answer<"deleteExport">);
  });
  app.get("/v1/exports/:id/:file", async (c) => {
    const info = await exportOr404(ctx, runner, c);
    const file = info.files.find((f) => f.path === c.req.param("file"));
    const path = file ? runner.filePath(info, file.path) : null;
    if (!file || !path) throw notFound(`file ${c.req.param("file")} of export ${info.id}`);
    const body = file.bytes === 0 ? null : (Readable.toWeb(createReadStream(path)) as ReadableStream);
    return new Response(body, {
      headers: {
        "content-type": file.path.endsWith(".json") ? "application/json" : "application/octet-stream",
        "content-length": String(file.bytes),
        "content-disposition": `attachment; filename="${file.path}"`,
      },
    });
  });
  return app;
}
