// POST /v1/inference/chat: chat with a base model, a job's final adapter or
// one of its checkpoints (wire InferArgs).
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import {
  array,
  boolean,
  byKind,
  type Check,
  inRange,
  literal,
  number,
  object,
  optional,
  parseBody,
  string,
} from "../http/validate.js";
import { UUID_PATTERN } from "../ids.js";
import { type ChatParams, respondWithChat } from "../inference/chat-completions.js";
import {
  checkToolRequest,
  engineMessages,
  messagesCheck,
  responseFormatCheck,
  toolChoiceCheck,
  toolsCheck,
} from "../inference/chat-request.js";
import type { ResolvedTarget } from "../inference/inference-service.js";
import { type AdapterRef, MAX_STORED_INTEGER, SEED_RANGE } from "../wire.js";
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

/** "stop": a string or up to 4 strings. */
export const stopCheck: Check<string[]> = (value, path) =>
  typeof value === "string"
    ? [string({ min: 1 })(value, path)]
    : array(string({ min: 1 }), { max: 4 })(value, path);

const inferBody = object({
  messages: messagesCheck,
  adapter: optional(adapterRefCheck),
  baseModel: optional(string({ min: 1, max: 300 })),
  temperature: optional(number({ min: 0, max: 2 })),
  topP: optional(number({ exclusiveMin: 0, max: 1 })),
  maxTokens: optional(number({ integer: true, positive: true, max: 8192 })),
  stop: optional(stopCheck),
  seed: optional(inRange(SEED_RANGE)),
  stream: optional(boolean()),
  tools: optional(toolsCheck),
  toolChoice: optional(toolChoiceCheck),
  parallelToolCalls: optional(boolean()),
  responseFormat: optional(responseFormatCheck),
});

export function inferenceRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/inference/chat", async (c) => {
    const body = parseBody(inferBody, await readJson(c));
    await checkToolRequest(body, {
      tools: "tools",
      toolChoice: "toolChoice",
      responseFormat: "responseFormat",
    });
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
    // Only the generation's own fields cross to the inference process.
    const { adapter: _adapter, baseModel: _baseModel, stream, messages, ...generation } = body;
    const params: ChatParams = {
      ...generation,
      messages: engineMessages(messages),
      stream: stream ?? false,
      toolsField: "tools",
    };
    return respondWithChat(c, ctx.inference, target, params);
  });
  return app;
}
