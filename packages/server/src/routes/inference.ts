// POST /v1/inference/chat: chat with a base model, a job's final adapter or
// one of its checkpoints (wire InferArgs); POST /v1/responses: the same in
// OpenAI's Responses API.

import { type AdapterRef, MAX_STORED_INTEGER } from "@svc/wire";
import { type Context, Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { byKind, type Check, inRange, literal, object, optional, string } from "../http/validate.js";
import { UUID_PATTERN } from "../ids.js";
import { respondWithChat } from "../inference/chat-completions.js";
import { parseChatRequest } from "../inference/chat-params.js";
import type { ResolvedTarget } from "../inference/inference-service.js";
import { respondWithResponse } from "../inference/responses.js";
import { parseResponsesRequest } from "../inference/responses-request.js";
import { visibleJob } from "./access.js";
import { fineTunedModelOr404 } from "./openai/models.js";

const uuid = () => string({ pattern: UUID_PATTERN, patternText: "a UUID" });

export const adapterRefCheck: Check<AdapterRef> = byKind<AdapterRef>({
  final: object({ kind: literal("final"), jobId: uuid() }),
  checkpoint: object({
    kind: literal("checkpoint"),
    jobId: uuid(),
    step: inRange({ integer: true, min: 1, max: MAX_STORED_INTEGER }),
  }),
});

export function inferenceRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/inference/chat", async (c) => {
    const { params, extra } = await parseChatRequest(await readJson(c), "svc", {
      adapter: optional(adapterRefCheck),
      baseModel: optional(string({ min: 1, max: 300 })),
    });
    const body = extra as { adapter?: AdapterRef; baseModel?: string };
    let target: ResolvedTarget;
    if (body.adapter && body.baseModel) throw badRequest(`"adapter" and "baseModel" cannot both be given`);
    if (body.adapter) {
      const job = await visibleJob(ctx, c, body.adapter.jobId);
      if (!job) throw notFound(`job ${body.adapter.jobId}`);
      target = await ctx.inference.adapter(job, body.adapter, "adapter");
    } else if (body.baseModel) {
      target = ctx.inference.baseModel(body.baseModel, "baseModel", { pull: true });
    } else {
      const names = ctx.models.names();
      if (names.length !== 1) throw badRequest(`"baseModel" or "adapter" is required`);
      target = ctx.inference.baseModel(names[0], "baseModel");
    }
    return respondWithChat(c, ctx.inference, target, params);
  });

  // The Responses API on the cloud API: `model` names a base model, or a
  // fine-tuned model (ft:…, a checkpoint's ft:…:ckpt-step-N) as on the cloud
  // API's /v1/chat/completions (docs/openai-fine-tuning.md); errors in OpenAI's shape.
  app.post("/v1/responses", async (c) => {
    const request = await parseResponsesRequest(await readJson(c));
    return respondWithResponse(c, ctx.inference, await responsesTarget(ctx, c, request.model), request);
  });
  return app;
}

/** What a Responses request's `model` names, as on the cloud API's chat completions (see the route). */
async function responsesTarget(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  model: string | undefined,
): Promise<ResolvedTarget> {
  if (model === undefined) {
    const names = ctx.models.names();
    if (names.length !== 1) throw badRequest(`"model" is required: a base model or a fine-tuned ft:… model`);
    return ctx.inference.baseModel(names[0], "model");
  }
  if (!model.startsWith("ft:")) return ctx.inference.baseModel(model, "model", { pull: true });
  const { job, step } = await fineTunedModelOr404(ctx, c, model);
  const ref: AdapterRef =
    step === null ? { kind: "final", jobId: job.id } : { kind: "checkpoint", jobId: job.id, step };
  return { ...(await ctx.inference.adapter(job, ref, "model")), label: model };
}
