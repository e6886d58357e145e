// POST /v1/chat/completions on the cloud API, as OpenAI serves it: `model` is
// a base model this server serves or a fine-tuned one (ft:…, a checkpoint's
// ft:…:ckpt-step-N) the caller's org owns. The chat itself is the edge's and
// /v1/inference/chat's: the same parser (OpenAI's dialect) and generation.

import type { AdapterRef } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { readJson } from "../../http/body.js";
import { OpenAiError } from "../../http/openai-error.js";
import { respondWithChat } from "../../inference/chat-completions.js";
import { parseChatRequest } from "../../inference/chat-params.js";
import type { ResolvedTarget } from "../../inference/inference-service.js";
import { fineTunedModelOr404 } from "./models.js";

export function openAiChatRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/chat/completions", async (c) => {
    const body = await readJson(c);
    const { params } = await parseChatRequest(body, "openai");
    const model = (body as { model?: unknown }).model;
    if (typeof model !== "string")
      throw new OpenAiError(400, "invalid_request", `"model" is required`, "model");
    let target: ResolvedTarget;
    if (model.startsWith("ft:")) {
      const { job, step } = await fineTunedModelOr404(ctx, c, model);
      const ref: AdapterRef =
        step === null ? { kind: "final", jobId: job.id } : { kind: "checkpoint", jobId: job.id, step };
      target = await ctx.inference.adapter(job, ref, "model");
    } else {
      target = ctx.inference.baseModel(model, "model", { pull: true });
    }
    return respondWithChat(c, ctx.inference, { ...target, label: model }, params);
  });
  return app;
}
