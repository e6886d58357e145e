// OpenAI's files: POST /v1/files (multipart `file` and `purpose`),
// GET /v1/files (purpose, limit, after, order), GET /v1/files/{id},
// GET /v1/files/{id}/content, DELETE /v1/files/{id}. A file is an svc
// dataset (file-<dataset id>), validated line by line at upload as every
// dataset is; a succeeded job's metrics CSV is the file file-result-<job id>.
import { readFile } from "node:fs/promises";
import { type Context, Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import type { DatasetsTable } from "../../db/schema.js";
import { ApiError } from "../../http/api-error.js";
import { readBodyBytes } from "../../http/body.js";
import { noSuch, OpenAiError, refuseParam } from "../../http/openai-error.js";
import { oneOf, string } from "../../http/validate.js";
import { storeDataset } from "../datasets.js";
import { unixSeconds } from "./fine-tuning-job-object.js";
import { metricsCsv } from "./fine-tuning-result-file.js";
import { datasetIdOf, fileId, fineTuningJobId, resultFileId, resultJobIdOf } from "./openai-ids.js";
import { checkQuery, limitQuery, pageAfter } from "./openai-list.js";
import { canSee, scopedProject } from "./openai-scope.js";

/** OpenAI's purposes; svc keeps files for fine-tuning only. */
const PURPOSES = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"] as const;
/** What a multipart upload may add to the file itself (its form fields and their boundaries). */
const MULTIPART_OVERHEAD = 64 * 1024;

interface FileObject {
  id: string;
  object: "file";
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: "processed";
  status_details: null;
  expires_at: null;
}

const datasetFile = (row: Pick<DatasetsTable, "id" | "name" | "bytes" | "created_at">): FileObject => ({
  id: fileId(row.id),
  object: "file",
  bytes: row.bytes,
  created_at: unixSeconds(row.created_at),
  filename: row.name,
  purpose: "fine-tune",
  status: "processed",
  status_details: null,
  expires_at: null,
});

/** The multipart body's `file` and `purpose`; anything else in it is refused, naming it. */
async function readUpload(c: Context, limit: number): Promise<{ file: File; purpose: string }> {
  const type = c.req.header("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(type))
    throw refuseParam(
      "file",
      `POST /v1/files takes multipart/form-data with "file" and "purpose" (got ${type || "no content type"})`,
    );
  const bytes = await readBodyBytes(c, limit + MULTIPART_OVERHEAD);
  let form: FormData;
  try {
    form = await new Response(bytes, { headers: { "content-type": type } }).formData();
  } catch {
    throw refuseParam("file", "the request body is not valid multipart/form-data");
  }
  for (const key of form.keys())
    if (key !== "file" && key !== "purpose")
      throw refuseParam(key, `"${key}" is not a known field of a file upload`);
  const file = form.get("file");
  const purpose = form.get("purpose");
  if (!(file instanceof File))
    throw refuseParam("file", `"file" is required: the file itself, as a multipart file field`);
  if (typeof purpose !== "string") throw refuseParam("purpose", `"purpose" is required`);
  return { file, purpose };
}

export function fileRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();

  /** The dataset or job (its result file) a file id names, when the caller may see it. */
  const fileOr404 = async (c: Context<ApiEnv>, id: string) => {
    const datasetId = datasetIdOf(id);
    if (datasetId) {
      const row = await ctx.store.datasets.get(datasetId);
      if (row && (await canSee(ctx, c, row.project_id))) return { dataset: row };
    }
    const jobId = resultJobIdOf(id);
    if (jobId) {
      const job = await ctx.store.jobs.get(jobId);
      if (job && (await canSee(ctx, c, job.project_id))) return { job };
    }
    throw noSuch("File object", id, "file_id");
  };

  const resultFile = async (jobId: string): Promise<FileObject> => {
    const job = await ctx.store.jobs.get(jobId);
    return {
      id: resultFileId(jobId),
      object: "file",
      bytes: Buffer.byteLength(await metricsCsv(ctx, jobId)),
      created_at: unixSeconds(job?.finished_at ?? job?.created_at ?? new Date().toISOString()),
      filename: "step_metrics.csv",
      purpose: "fine-tune-results",
      status: "processed",
      status_details: null,
      expires_at: null,
    };
  };

  app.post("/v1/files", async (c) => {
    const project = await scopedProject(ctx, c);
    const { file, purpose } = await readUpload(c, ctx.maxDatasetBytes);
    oneOf(PURPOSES)(purpose, "purpose");
    if (purpose !== "fine-tune")
      throw refuseParam(
        "purpose",
        `"purpose": svc keeps files for fine-tuning only: send "fine-tune" (got ${JSON.stringify(purpose)})`,
      );
    const name = string({ min: 1, max: 200 })(file.name, "file");
    const bytes = Buffer.from(await file.arrayBuffer());
    if (bytes.length === 0)
      throw refuseParam(
        "file",
        `"file" is empty: send a JSONL file, one training example a line`,
        "invalid_file_format",
      );
    try {
      const { dataset } = await storeDataset(ctx, project, name, bytes, null);
      return c.json(
        datasetFile({
          id: dataset.id,
          name: dataset.name,
          bytes: dataset.bytes,
          created_at: dataset.createdAt,
        }),
      );
    } catch (error) {
      // The dataset check's message names the file's line and field.
      if (error instanceof ApiError && error.code === "invalid_dataset")
        throw refuseParam("file", error.message, "invalid_file_format");
      throw error;
    }
  });

  app.get("/v1/files", async (c) => {
    checkQuery(c, ["purpose", "limit", "after", "order"]);
    const project = await scopedProject(ctx, c);
    const purpose = c.req.query("purpose");
    if (purpose !== undefined) oneOf([...PURPOSES, "fine-tune-results"])(purpose, "purpose");
    const order = oneOf(["asc", "desc"] as const)(c.req.query("order") ?? "desc", "order");
    const limit = limitQuery(c, 10_000, 10_000);
    const rows =
      purpose === undefined || purpose === "fine-tune" ? await ctx.store.datasets.list(project.id) : [];
    const files = rows.map((d) =>
      datasetFile({ id: d.id, name: d.name, bytes: d.bytes, created_at: d.createdAt }),
    );
    if (order === "asc") files.reverse();
    const page = pageAfter(files, c.req.query("after"), limit);
    return c.json({
      object: "list",
      data: page.data,
      first_id: page.data[0]?.id ?? null,
      last_id: page.data.at(-1)?.id ?? null,
      has_more: page.has_more,
    });
  });

  app.get("/v1/files/:id", async (c) => {
    const found = await fileOr404(c, c.req.param("id"));
    return c.json(found.dataset ? datasetFile(found.dataset) : await resultFile(found.job.id));
  });

  app.get("/v1/files/:id/content", async (c) => {
    const found = await fileOr404(c, c.req.param("id"));
    if (found.job)
      return c.body(await metricsCsv(ctx, found.job.id), 200, { "content-type": "text/csv; charset=utf-8" });
    const bytes = await readFile(ctx.dataDir.abs(found.dataset.path));
    return c.body(new Uint8Array(bytes), 200, { "content-type": "application/octet-stream" });
  });

  app.delete("/v1/files/:id", async (c) => {
    const id = c.req.param("id");
    const found = await fileOr404(c, id);
    if (found.job)
      throw new OpenAiError(
        400,
        "file_in_use",
        `${id} is the result file of ${fineTuningJobId(found.job.id)}: it lives as long as the job`,
        "file_id",
      );
    const outcome = await ctx.store.datasets.delete(found.dataset.id);
    if ("usedByJob" in outcome)
      throw new OpenAiError(
        409,
        "file_in_use",
        `${id} is a training or validation file of ${fineTuningJobId(outcome.usedByJob)}: svc keeps a job's files as long as the job`,
        "file_id",
      );
    ctx.dataDir.remove(found.dataset.path);
    return c.json({ id, object: "file", deleted: true });
  });
  return app;
}
