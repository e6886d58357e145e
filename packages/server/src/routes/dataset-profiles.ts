// GET /v1/datasets/:id/profile?baseModel=&maxLength=: the dataset's profile for
// a base model's tokenizer (@svc/wire's dataset-profiles.ts). The first request starts
// the computation in the background and answers 202 with status "pending" and
// its progress; later ones answer 200 with the result (or the reason it failed).
// POST /v1/datasets?baseModel= starts it at upload (routes/datasets.ts).

import { type DatasetProfile, DEFAULT_PROFILE_MAX_LENGTH, hyperparameterRanges } from "@svc/wire";
import type { Context } from "hono";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import type { DatasetsTable } from "../db/schema.js";
import { badRequest } from "../http/api-error.js";
import { integerQuery } from "../http/validate.js";
import type { RegisteredModel } from "../models/model-registry.js";
import { toDatasetProfile } from "../profiles/profile-view.js";
import { datasetOr404 } from "./access.js";

/** The served base model `name`, or a 400 naming `field` and the served ones. */
export function profileModel(ctx: ServerContext, name: string, field: string): RegisteredModel {
  // the 400 for a model not served here; a profile needs only its tokenizer, which transformers-only models have
  ctx.inference.baseModel(name, field, { allowTransformersOnly: true });
  return ctx.models.get(name) as RegisteredModel;
}

/** `?maxLength=`: what rows over it and the histogram are counted for. */
export function profileMaxLength(raw: string | undefined): number {
  return integerQuery(raw, "maxLength", hyperparameterRanges().lora.maxLength, DEFAULT_PROFILE_MAX_LENGTH);
}

/** The profile of `dataset` for `model` (started when there is none), as the API shows it. */
export async function datasetProfile(
  ctx: ServerContext,
  dataset: DatasetsTable,
  model: RegisteredModel,
  maxLength: number,
): Promise<DatasetProfile> {
  const row = await ctx.profiler.request(dataset, model);
  return toDatasetProfile(row, { maxLength, contextLength: model.info.contextLength });
}

/** 202 with Retry-After while pending, else 200. */
export function profileStatus(c: Context<ApiEnv>, profile: DatasetProfile): 200 | 202 {
  if (profile.status !== "pending") return 200;
  c.header("Retry-After", "1");
  return 202;
}

export function datasetProfileRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/datasets/:id/profile", async (c) => {
    const dataset = await datasetOr404(ctx, c, c.req.param("id"));
    const name = c.req.query("baseModel");
    if (!name)
      throw badRequest(
        `"baseModel" (query parameter) is required: the base model whose tokenizer counts the tokens`,
      );
    const model = profileModel(ctx, name, "baseModel");
    const maxLength = profileMaxLength(c.req.query("maxLength"));
    const profile = await datasetProfile(ctx, dataset, model, maxLength);
    return c.json({ profile }, profileStatus(c, profile));
  });
  return app;
}
