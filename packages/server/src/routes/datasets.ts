// Datasets: POST /v1/datasets with the JSONL as the body (?name=), or JSON
// { url, token?, name? } to fetch it; GET /v1/datasets[/:id]. Files are
// validated line by line before anything is stored.
import { isEngineError, parseDataset } from "@svc/engine";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { ApiError, badRequest, notFound } from "../http/api-error.js";
import { readBodyBytes, readJson } from "../http/body.js";
import { object, optional, parseBody, string } from "../http/validate.js";
import { nowIso, UUID_PATTERN, uuidv7 } from "../ids.js";
import { toDataset } from "../store/dataset-store.js";
import type { Project } from "../wire.js";
import { projectFromQuery } from "./access.js";

const fromUrlBody = object({
  url: string({ min: 1, max: 2048 }),
  token: optional(string({ min: 1, max: 4096 })),
  name: optional(string({ min: 1, max: 200 })),
});

const nameCheck = optional(string({ min: 1, max: 200 }));

async function fetchDataset(url: string, token: string | undefined, limit: number): Promise<Buffer> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest(`"url" is not a valid URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw badRequest(`"url" must be an http(s) URL`);
  let response: Response;
  try {
    response = await fetch(parsed, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  } catch (error) {
    throw badRequest(
      `"url": fetching ${parsed.href} failed: ${(error as Error).message}`,
      "dataset_fetch_failed",
    );
  }
  if (!response.ok)
    throw badRequest(`"url": ${parsed.href} answered HTTP ${response.status}`, "dataset_fetch_failed");
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > limit)
    throw new ApiError(413, "payload_too_large", `"url": the dataset exceeds ${limit} bytes`);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length > limit)
    throw new ApiError(413, "payload_too_large", `"url": the dataset exceeds ${limit} bytes`);
  return bytes;
}

export function datasetRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();

  const store = async (project: Project, name: string, bytes: Buffer) => {
    const text = bytes.toString("utf8");
    let rows: number;
    try {
      rows = parseDataset(text, { source: name }).length;
    } catch (error) {
      if (isEngineError(error)) throw badRequest(error.message, "invalid_dataset");
      throw error;
    }
    const id = uuidv7();
    const path = ctx.dataDir.datasetPath(id);
    ctx.dataDir.writeAtomic(path, bytes);
    return ctx.store.datasets.insert({
      id,
      project_id: project.id,
      name,
      rows,
      bytes: bytes.length,
      path,
      created_at: nowIso(),
    });
  };

  app.post("/v1/datasets", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (type === "application/json") {
      const body = parseBody(fromUrlBody, await readJson(c));
      const bytes = await fetchDataset(body.url, body.token, ctx.maxDatasetBytes);
      const name = body.name ?? (new URL(body.url).pathname.split("/").pop() || "dataset.jsonl");
      return c.json({ dataset: await store(project, name, bytes) }, 201);
    }
    const name = nameCheck(c.req.query("name"), "name") ?? "dataset.jsonl";
    const bytes = await readBodyBytes(c, ctx.maxDatasetBytes);
    if (bytes.length === 0)
      throw badRequest("request body is empty; send the JSONL file as the body", "invalid_dataset");
    return c.json({ dataset: await store(project, name, bytes) }, 201);
  });

  app.get("/v1/datasets", async (c) => {
    const project = await projectFromQuery(ctx, c);
    return c.json({ datasets: await ctx.store.datasets.list(project.id) });
  });

  app.get("/v1/datasets/:id", async (c) => {
    const id = c.req.param("id");
    const row = UUID_PATTERN.test(id) ? await ctx.store.datasets.get(id) : undefined;
    const orgId = row && (await ctx.store.projects.orgIdOf(row.project_id));
    if (!row || !orgId || !(await ctx.store.identity.isMember(c.get("user").id, orgId)))
      throw notFound(`dataset ${id}`);
    return c.json({ dataset: toDataset(row) });
  });
  return app;
}
