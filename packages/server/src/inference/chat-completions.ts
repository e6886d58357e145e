// Chat generation in the OpenAI chat.completion format, shared by the cloud
// API's /v1/inference/chat and the edge's /v1/chat/completions.

import type { GenerationRequest, GenerationResult } from "@svc/engine";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { randomBase62 } from "../ids.js";
import type { ChatCompletion, ChatCompletionChunk, ChatMessage } from "../wire.js";
import type { InferenceService, ResolvedTarget } from "./inference-service.js";

export interface ChatParams {
  messages: ChatMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  stream: boolean;
}

const finishReason = (r: GenerationResult["finishReason"]): "stop" | "length" =>
  r === "length" ? "length" : "stop";

const usageOf = (r: GenerationResult) => ({
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  total_tokens: r.promptTokens + r.completionTokens,
});

/**
 * Runs the chat on the target and answers with a chat.completion, or with
 * SSE chat.completion.chunk lines ending in `data: [DONE]` when streaming.
 * `onError` turns a failure before the first byte into the caller's error shape.
 */
export async function respondWithChat(
  c: Context,
  inference: InferenceService,
  target: ResolvedTarget,
  params: ChatParams,
): Promise<Response> {
  const id = `chatcmpl-${randomBase62(24)}`;
  const created = Math.floor(Date.now() / 1000);
  const prepared = await inference.prepare(target);
  const request: GenerationRequest = {
    messages: params.messages,
    adapter: prepared.adapter,
    temperature: params.temperature,
    topP: params.topP,
    maxTokens: params.maxTokens,
    stop: params.stop,
    seed: params.seed,
  };
  if (!params.stream) {
    const controller = new AbortController();
    c.req.raw.signal?.addEventListener("abort", () => controller.abort());
    const result = await prepared.generator.complete({ ...request, signal: controller.signal });
    const body: ChatCompletion = {
      id,
      object: "chat.completion",
      created,
      model: target.label,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: result.text },
          finish_reason: finishReason(result.finishReason),
        },
      ],
      usage: usageOf(result),
    };
    return c.json(body);
  }
  return streamSSE(c, async (stream) => {
    const controller = new AbortController();
    stream.onAbort(() => controller.abort());
    const chunk = (
      delta: ChatCompletionChunk["choices"][0]["delta"],
      finish: "stop" | "length" | null,
      usage?: GenerationResult,
    ) => {
      const body: ChatCompletionChunk = {
        id,
        object: "chat.completion.chunk",
        created,
        model: target.label,
        choices: [{ index: 0, delta, finish_reason: finish }],
        usage: usage ? usageOf(usage) : null,
      };
      return stream.writeSSE({ data: JSON.stringify(body) });
    };
    try {
      await chunk({ role: "assistant", content: "" }, null);
      const generation = prepared.generator.generate({ ...request, signal: controller.signal });
      for (;;) {
        const next = await generation.next();
        if (next.done) {
          await chunk({}, finishReason(next.value.finishReason), next.value);
          break;
        }
        if (next.value.text !== "") await chunk({ content: next.value.text }, null);
      }
    } catch (error) {
      await stream.writeSSE({
        data: JSON.stringify({
          error: {
            message: (error as Error).message,
            type: "server_error",
            param: null,
            code: "generation_failed",
          },
        }),
      });
    }
    await stream.writeSSE({ data: "[DONE]" });
  });
}
