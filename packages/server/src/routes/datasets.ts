// Datasets: POST /v1/datasets with the JSONL as the body (?name=), JSON
// { url, token?, name? } to fetch it, or JSON { huggingface: { name, split,
// config?, revision?, columns? } } for a Hub dataset's split (converted to the
// same rows, datasets/hub-dataset-source.ts); GET /v1/datasets[/:id]. Files are
// validated line by line before anything is stored. A base model named at
// upload (?baseModel=&maxLength=, or in the JSON body) starts the dataset's
// profile for it, and the answer carries the profile as it stands (dataset-profiles.ts).

import {
  type Answer,
  type Dataset,
  type DatasetProfile,
  DEFAULT_PROFILE_MAX_LENGTH,
  hyperparameterRanges,
  type Project,
} from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { loadHubDataset } from "../datasets/hub-dataset-source.js";
import { HubSplitRecords } from "../datasets/hub-split-record.js";
import { badRequest } from "../http/api-error.js";
import { readBodyBytes, readJson } from "../http/body.js";
import { fetchDatasetUrl } from "../http/dataset-url.js";
import { checkDatasetOffLoop } from "../http/dataset-validation.js";
import { inRange, object, optional, parseBody, string } from "../http/validate.js";
import { nowIso, uuidv7 } from "../ids.js";
import type { RegisteredModel } from "../models/model-registry.js";
import { toDataset } from "../store/dataset-store.js";
import { datasetOr404, projectFromQuery } from "./access.js";
import { datasetProfile, profileMaxLength, profileModel } from "./dataset-profiles.js";

/** What an upload profiles the dataset for: a base model and the maxLength counts are read for. */
export interface ProfileRequest {
  model: RegisteredModel;
  maxLength: number;
}

const fromUrlBody = object({
  url: string({ min: 1, max: 2048 }),
  token: optional(string({ min: 1, max: 4096 })),
  name: optional(string({ min: 1, max: 200 })),
  baseModel: optional(string({ min: 1, max: 200 })),
  maxLength: optional(inRange(hyperparameterRanges().lora.maxLength)),
});

const hubName = () => optional(string({ min: 1, max: 200 }));

const fromHubBody = object({
  huggingface: object({
    name: string({ min: 1, max: 200 }),
    split: string({ min: 1, max: 200 }),
    config: hubName(),
    revision: hubName(),
    columns: optional(
      object({
        messages: hubName(),
        prompt: hubName(),
        completion: hubName(),
        instruction: hubName(),
        input: hubName(),
        output: hubName(),
        system: hubName(),
      }),
    ),
  }),
  name: optional(string({ min: 1, max: 200 })),
  baseModel: optional(string({ min: 1, max: 200 })),
  maxLength: optional(inRange(hyperparameterRanges().lora.maxLength)),
});

const nameCheck = optional(string({ min: 1, max: 200 }));

/** Fields left out (undefined) are dropped, so the mapping holds only what was given. */
const given = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

/**
 * Rows of a dataset file, or a 400 naming its first bad line. A fetched file's
 * errors give the line only: the details would quote what another host sent.
 */
async function datasetRows(bytes: Buffer, name: string, fetched: boolean): Promise<number> {
  const check = await checkDatasetOffLoop(bytes, name);
  if ("rows" in check) return check.rows;
  const where = (line: number | undefined) => (line ? `${name} line ${line}` : name);
  if (fetched) {
    const line = check.problem === "invalid_dataset" ? check.line : undefined;
    throw badRequest(`"url": the fetched file is not a valid dataset (${where(line)})`, "invalid_dataset");
  }
  const message =
    check.problem === "invalid_utf8" ? `${where(check.line)}: not valid UTF-8 text` : check.message;
  throw badRequest(message, "invalid_dataset");
}

/**
 * Validates a dataset file and stores it in `project` (file, then row), with
 * its profile started when one is asked for: every upload's one way in
 * (/v1/datasets and the OpenAI /v1/files alike).
 */
export async function storeDataset(
  ctx: ServerContext,
  project: Project,
  name: string,
  bytes: Buffer,
  profile: ProfileRequest | null,
  fetched = false,
  checkedRows?: number,
): Promise<{ dataset: Dataset; profile?: DatasetProfile }> {
  const rows = checkedRows ?? (await datasetRows(bytes, name, fetched));
  const id = uuidv7();
  const path = ctx.dataDir.datasetPath(id);
  await ctx.dataDir.writeAtomicAsync(path, bytes);
  const row = { id, project_id: project.id, name, rows, bytes: bytes.length, path, created_at: nowIso() };
  let dataset: Dataset;
  try {
    dataset = await ctx.store.datasets.insert(row);
  } catch (error) {
    // No row, no file: a refused or failed upload leaves nothing in the data dir.
    ctx.dataDir.remove(path);
    throw error;
  }
  if (!profile) return { dataset };
  return { dataset, profile: await datasetProfile(ctx, row, profile.model, profile.maxLength) };
}

export function datasetRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const hubSplitRecords = new HubSplitRecords(ctx.dataDir.abs("hub-datasets"));

  app.post("/v1/datasets", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (type === "application/json") {
      const json = await readJson(c);
      if (typeof json === "object" && json !== null && "huggingface" in json) {
        const body = parseBody(fromHubBody, json);
        const request = given({
          ...body.huggingface,
          columns: body.huggingface.columns && given(body.huggingface.columns),
        });
        const profile = body.baseModel
          ? {
              model: profileModel(ctx, body.baseModel, "baseModel"),
              maxLength: body.maxLength ?? DEFAULT_PROFILE_MAX_LENGTH,
            }
          : null;
        const loaded = await loadHubDataset(request, {
          limit: ctx.maxDatasetBytes,
          records: hubSplitRecords,
          signal: c.req.raw.signal,
        });
        const config = loaded.source.config ? `/${loaded.source.config}` : "";
        const name = nameCheck(body.name, "name") ?? `${request.name}${config}:${request.split}`;
        const stored = await storeDataset(ctx, project, name, loaded.jsonl, profile, false, loaded.rows);
        return c.json({ ...stored, source: loaded.source } satisfies Answer<"createDataset">, 201);
      }
      const body = parseBody(fromUrlBody, json);
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
      const profile = body.baseModel
        ? {
            model: profileModel(ctx, body.baseModel, "baseModel"),
            maxLength: body.maxLength ?? DEFAULT_PROFILE_MAX_LENGTH,
          }
        : null;
      const bytes = await fetchDatasetUrl(url, body.token, {
        limit: ctx.maxDatasetBytes,
        allowedHosts: ctx.datasetUrlAllow,
        ownPorts: ctx.ownPorts,
      });
      return c.json(
        (await storeDataset(ctx, project, name, bytes, profile, true)) satisfies Answer<"createDataset">,
        201,
      );
    }
    const name = nameCheck(c.req.query("name"), "name") ?? "dataset.jsonl";
    const baseModel = c.req.query("baseModel");
    const profile = baseModel
      ? {
          model: profileModel(ctx, baseModel, "baseModel"),
          maxLength: profileMaxLength(c.req.query("maxLength")),
        }
      : null;
    const bytes = await readBodyBytes(c, ctx.maxDatasetBytes);
    if (bytes.length === 0)
      throw badRequest("request body is empty; send the JSONL file as the body", "invalid_dataset");
    return c.json(
      (await storeDataset(ctx, project, name, bytes, profile)) satisfies Answer<"createDataset">,
      201,
    );
  });

  app.get("/v1/datasets", async (c) => {
    const project = await projectFromQuery(ctx, c);
    return c.json({ datasets: await ctx.store.datasets.list(project.id) } satisfies Answer<"listDatasets">);
  });

  app.get("/v1/datasets/:id", async (c) => {
    return c.json({
      dataset: toDataset(await datasetOr404(ctx, c, c.req.param("id"))),
    } satisfies Answer<"getDataset">);
  });
  return app;
}
