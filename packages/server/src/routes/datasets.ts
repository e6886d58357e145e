// Datasets: POST /v1/datasets with the JSONL as the body (?name=), or JSON
// { url, token?, name? } to fetch it; GET /v1/datasets[/:id]. Files are
// validated line by line before anything is stored.
import { EngineError, isEngineError, parseDataset } from "@svc/engine";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, notFound } from "../http/api-error.js";
import { lineOfInvalidUtf8, readBodyBytes, readJson, utf8Text } from "../http/body.js";
import { fetchDatasetUrl } from "../http/dataset-url.js";
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

/**
 * Rows of a dataset file, or a 400 naming its first bad line. A fetched file's
 * errors give the line only: the details would quote what another host sent.
 */
function datasetRows(bytes: Buffer, name: string, fetched: boolean): number {
  const text = utf8Text(bytes);
  const where = (line: number | undefined) => (line ? `${name} line ${line}` : name);
  try {
    if (text === null)
      throw new EngineError("invalid_dataset", `${where(lineOfInvalidUtf8(bytes))}: not valid UTF-8 text`);
    return parseDataset(text, { source: name }).length;
  } catch (error) {
    if (!isEngineError(error)) throw error;
    const message = fetched
      ? `"url": the fetched file is not a valid dataset (${where(error.line)})`
      : error.message;
    throw badRequest(message, "invalid_dataset");
  }
}

export function datasetRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();

  const store = async (project: Project, name: string, bytes: Buffer, fetched = false) => {
    const rows = datasetRows(bytes, name, fetched);
    const id = uuidv7();
    const path = ctx.dataDir.datasetPath(id);
    ctx.dataDir.writeAtomic(path, bytes);
    try {
      return await ctx.store.datasets.insert({
        id,
        project_id: project.id,
        name,
        rows,
        bytes: bytes.length,
        path,
        created_at: nowIso(),
      });
    } catch (error) {
      // No row, no file: a refused or failed upload leaves nothing in the data dir.
      ctx.dataDir.remove(path);
      throw error;
    }
  };

  app.post("/v1/datasets", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (type === "application/json") {
      const body = parseBody(fromUrlBody, await readJson(c));
      let url: URL;
      try {
        url = new URL(body.url);
      } catch {
        throw badRequest(`"url" is not a valid URL`);
      }
      if (url.protocol !== "http:" && url.protocol !== "https:")
        throw badRequest(`"url" must be an http(s) URL`);
      const name = nameCheck(
        body.name ?? (url.pathname.split("/").pop() || "dataset.jsonl"),
        "name",
      ) as string;
      const bytes = await fetchDatasetUrl(url, body.token, {
        limit: ctx.maxDatasetBytes,
        allowedHosts: ctx.datasetUrlAllow,
      });
      return c.json({ dataset: await store(project, name, bytes, true) }, 201);
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
