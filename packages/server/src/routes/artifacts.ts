// A job's artifacts (final adapter and checkpoints, PEFT layout; the
// TensorBoard event file): GET /v1/jobs/:id/artifacts, /:name (metadata) and
// /:name/:file (download). A running job's event file grows as it trains, so a
// download sends the file as long as it is when asked, not the size its
// listing last recorded (a record being appended at that instant may come cut
// short: TensorBoard, which tails files being written, reads that as the end).
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { Answer } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import { toArtifact } from "../store/job-store.js";
import { jobOr404 } from "./access.js";

export function artifactRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/jobs/:id/artifacts", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    return c.json({
      artifacts: (await ctx.store.jobs.artifacts(job.id)).map(toArtifact),
    } satisfies Answer<"listArtifacts">);
  });
  app.get("/v1/jobs/:id/artifacts/:name", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    const row = await ctx.store.jobs.artifact(job.id, c.req.param("name"));
    if (!row) throw notFound(`artifact ${c.req.param("name")}`);
    return c.json({ artifact: toArtifact(row) } satisfies Answer<"getArtifact">);
  });
  app.get("/v1/jobs/:id/artifacts/:name/:file", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    const row = await ctx.store.jobs.artifact(job.id, c.req.param("name"));
    if (!row) throw notFound(`artifact ${c.req.param("name")}`);
    const file = toArtifact(row).files.find((f) => f.path === c.req.param("file"));
    if (!file) throw notFound(`file ${c.req.param("file")} of artifact ${row.name}`);
    const path = join(ctx.dataDir.abs(row.dir), file.path);
    const bytes = await stat(path).then(
      (s) => s.size,
      () => null,
    );
    if (bytes === null) throw notFound(`file ${file.path} of artifact ${row.name}`);
    const body =
      bytes === 0
        ? null
        : (Readable.toWeb(createReadStream(path, { start: 0, end: bytes - 1 })) as ReadableStream);
    return new Response(body, {
      headers: {
        "content-type": file.path.endsWith(".json") ? "application/json" : "application/octet-stream",
        "content-length": String(bytes),
        "content-disposition": `attachment; filename="${file.path}"`,
      },
    });
  });
  return app;
}
