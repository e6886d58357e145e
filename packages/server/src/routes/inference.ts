// POST /v1/inference/chat: chat with a base model, a job's final adapter or
// one of its checkpoints (wire InferArgs).
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { byKind, type Check, inRange, literal, object, optional, string } from "../http/validate.js";
import { UUID_PATTERN } from "../ids.js";
import { respondWithChat } from "../inference/chat-completions.js";
import { parseChatRequest } from "../inference/chat-params.js";
import type { ResolvedTarget } from "../inference/inference-service.js";
import { type AdapterRef, MAX_STORED_INTEGER } from "../wire.js";
import { visibleJob } from "./access.js";

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
  return app;
}
