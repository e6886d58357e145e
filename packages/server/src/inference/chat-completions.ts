// Chat generation in the OpenAI chat.completion format, shared by the cloud
// API's /v1/inference/chat and the edge's /v1/chat/completions: `n` choices
// sampled together in the inference process's batch, each with its tool
// calls read from its text and, when asked, its tokens' logprobs.

import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { type GenerationResult, parseToolCalls } from "@svc/engine";
import type { ChatCompletion, ChatLogprobs, ChatTokenLogprob } from "@svc/wire";
import type { Context } from "hono";
import { ApiError, badRequest } from "../http/api-error.js";
import { abandon, type ChatStream, finishReason, totalUsage, usageOf, wireLogprob } from "./chat-choices.js";
import type { ToolRequest } from "./chat-request.js";
import { streamChat } from "./chat-stream.js";
import { planTools } from "./chat-tools.js";
import type { ChatGeneration, PromptLimits } from "./inference-protocol.js";
import type { InferenceService, ResolvedTarget } from "./inference-service.js";

/**
 * A chat request as the routes read it (chat-params.ts): the generation, how
 * many choices, whether and how to stream it, what it asks of tools and
 * output, and the names of fields that errors found later must name.
 */
export interface ChatParams extends Omit<ChatGeneration, "grammar">, ToolRequest {
  n: number;
  stream: boolean;
  /** Where a stream reports usage: OpenAI's own chunk (stream_options.include_usage), svc's last chunk, or nowhere. */
  streamUsage: "none" | "own_chunk" | "last_chunk";
  toolsField: string;
  logitBiasField: string;
}

/**
 * Refuses, before anything is tokenized, messages too long for the context
 * whatever their tokenization: B bytes need at least B / maxTokenBytes tokens.
 */
export function checkPromptFits(
  params: Pick<ChatGeneration, "messages" | "tools">,
  limits: PromptLimits,
): void {
  let bytes = params.tools === undefined ? 0 : Buffer.byteLength(JSON.stringify(params.tools));
  for (const m of params.messages) {
    bytes += Buffer.byteLength(m.content);
    if (m.tool_calls !== undefined) bytes += Buffer.byteLength(JSON.stringify(m.tool_calls));
  }
  const most = limits.contextLength * limits.maxTokenBytes;
  if (bytes > most)
    throw new ApiError(
      400,
      "context_length_exceeded",
      `the messages hold ${bytes} bytes of text; this model's context of ${limits.contextLength} tokens holds at most ${most} bytes (${limits.maxTokenBytes} per token at most)`,
    );
}

/** logit_bias names token ids of this model's vocabulary. */
function checkLogitBias(params: ChatParams, limits: PromptLimits): void {
  for (const key of Object.keys(params.logitBias ?? {}))
    if (Number(key) >= limits.vocabSize)
      throw badRequest(
        `"${params.logitBiasField}" key ${key} is not a token id of this model (ids are below ${limits.vocabSize})`,
      );
}

/** The Node response behind a Hono context (the servers run on @hono/node-server). */
export function nodeResponse(c: Context): ServerResponse {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing) throw new Error("chat responses need @hono/node-server (c.env.outgoing)");
  return outgoing;
}

/** One choice run to the end: its result and its tokens' logprobs. */
async function collect(
  generation: ChatStream,
): Promise<{ result: GenerationResult; logprobs: ChatTokenLogprob[] }> {
  const logprobs: ChatTokenLogprob[] = [];
  for (;;) {
    const next = await generation.next();
    if (next.done) return { result: next.value, logprobs };
    if (next.value.logprob) logprobs.push(wireLogprob(next.value.logprob));
  }
}

/**
 * Runs the chat on the target and answers with a chat.completion, or with
 * SSE chat.completion.chunk lines ending in `data: [DONE]` when streaming.
 * A client that hangs up aborts its generations. `onResult` gets the
 * request's usage once every choice is done (a cancelled one counts the
 * tokens generated so far).
 */
export async function respondWithChat(
  c: Context,
  inference: InferenceService,
  target: ResolvedTarget,
  params: ChatParams,
  onResult?: (result: GenerationResult) => void,
): Promise<Response> {
  const id = `chatcmpl-${randomUUID().replaceAll("-", "")}`;
  const created = Math.floor(Date.now() / 1000);
  const prepared = await inference.prepare(target);
  checkPromptFits(params, prepared.limits);
  checkLogitBias(params, prepared.limits);
  const {
    n,
    stream,
    streamUsage,
    toolsField,
    logitBiasField,
    toolChoice,
    parallelToolCalls,
    responseFormat,
    ...chat
  } = params;
  const plan = planTools(params, prepared.limits.toolSyntax, toolsField);
  const request: ChatGeneration = plan.grammar === undefined ? chat : { ...chat, grammar: plan.grammar };
  const res = nodeResponse(c);
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  // Choice i draws with seed + i: choice 0 is what the same request with n = 1 gives.
  const generations = Array.from({ length: n }, (_, i) =>
    prepared.generate(
      request.seed === undefined ? request : { ...request, seed: request.seed + i },
      controller.signal,
    ),
  );
  const wantLogprobs = request.logprobs !== undefined;
  if (stream) {
    const meta = { id, created, model: target.label, syntax: plan.syntax, wantLogprobs, streamUsage };
    return streamChat(res, generations, meta, onResult);
  }
  let choices: Awaited<ReturnType<typeof collect>>[];
  try {
    choices = await Promise.all(generations.map(collect));
  } catch (error) {
    await abandon(generations);
    throw error;
  }
  const results = choices.map((choice) => choice.result);
  onResult?.(totalUsage(results));
  const body: ChatCompletion = {
    id,
    object: "chat.completion",
    created,
    model: target.label,
    choices: choices.map(({ result, logprobs }, index) => {
      const parsed = plan.syntax === null ? null : parseToolCalls(plan.syntax, result.text);
      const called = parsed !== null && parsed.toolCalls.length > 0;
      const lp: ChatLogprobs = wantLogprobs ? { content: logprobs, refusal: null } : null;
      return {
        index,
        message: called
          ? {
              role: "assistant",
              content: parsed.content === "" ? null : parsed.content,
              tool_calls: parsed.toolCalls,
            }
          : { role: "assistant", content: result.text },
        logprobs: lp,
        finish_reason: finishReason(result.finishReason, called),
      };
    }),
    usage: usageOf(totalUsage(results)),
  };
  return c.json(body);
}
