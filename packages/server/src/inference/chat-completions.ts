// Chat generation in the OpenAI chat.completion format, shared by the cloud
// API's /v1/inference/chat and the edge's /v1/chat/completions.

import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { type GenerationResult, parseToolCalls, type ToolCallEvent, ToolCallStream } from "@svc/engine";
import type { Context } from "hono";
import { ApiError } from "../http/api-error.js";
import type { ChatCompletion, ChatCompletionChunk, ChatFinishReason, ToolCallDelta } from "../wire.js";
import type { ToolRequest } from "./chat-request.js";
import { planTools } from "./chat-tools.js";
import type { ChatGeneration, PromptLimits } from "./inference-protocol.js";
import type { InferenceService, ResolvedTarget } from "./inference-service.js";

/**
 * A chat request as the routes read it: the generation, whether to stream it,
 * what it asks of tools and output, and the name of its "tools" field in errors.
 */
export interface ChatParams extends Omit<ChatGeneration, "grammar">, ToolRequest {
  stream: boolean;
  toolsField: string;
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

const finishReason = (r: GenerationResult["finishReason"], called: boolean): ChatFinishReason =>
  r === "length" ? "length" : called ? "tool_calls" : "stop";

/** A streamed tool-call event as OpenAI's chunk delta. */
function toolCallDelta(event: Exclude<ToolCallEvent, { type: "content" }>): ToolCallDelta {
  return event.type === "call"
    ? { index: event.index, id: event.id, type: "function", function: { name: event.name, arguments: "" } }
    : { index: event.index, function: { arguments: event.text } };
}

const usageOf = (r: GenerationResult) => ({
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  total_tokens: r.promptTokens + r.completionTokens,
});

/** The Node response behind a Hono context (the servers run on @hono/node-server). */
export function nodeResponse(c: Context): ServerResponse {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing) throw new Error("chat responses need @hono/node-server (c.env.outgoing)");
  return outgoing;
}

/**
 * Runs the chat on the target and answers with a chat.completion, or with
 * SSE chat.completion.chunk lines ending in `data: [DONE]` when streaming.
 * A client that hangs up aborts its generation. `onResult` gets the
 * generation's result (a cancelled one holds the tokens generated so far).
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
  const { stream, toolsField, toolChoice, parallelToolCalls, responseFormat, ...chat } = params;
  const plan = planTools(params, prepared.limits.toolSyntax, toolsField);
  const request: ChatGeneration = plan.grammar === undefined ? chat : { ...chat, grammar: plan.grammar };
  const res = nodeResponse(c);
  const controller = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  res.once("close", onClose);
  if (!stream) {
    const result = await prepared.complete(request, controller.signal);
    onResult?.(result);
    const parsed = plan.syntax === null ? null : parseToolCalls(plan.syntax, result.text);
    const called = parsed !== null && parsed.toolCalls.length > 0;
    const body: ChatCompletion = {
      id,
      object: "chat.completion",
      created,
      model: target.label,
      choices: [
        {
          index: 0,
          message: called
            ? {
                role: "assistant",
                content: parsed.content === "" ? null : parsed.content,
                tool_calls: parsed.toolCalls,
              }
            : { role: "assistant", content: result.text },
          finish_reason: finishReason(result.finishReason, called),
        },
      ],
      usage: usageOf(result),
    };
    return c.json(body);
  }
  // The first result comes before the headers, so a request the model refuses
  // (the prompt does not fit the context) is an HTTP error, not an error chunk.
  const generation = prepared.generate(request, controller.signal);
  let next = await generation.next();
  // Streamed straight to the Node response (no web-stream layers per chunk).
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const send = async (data: string) => {
    if (res.writableEnded || res.destroyed) return;
    if (!res.write(`data: ${data}\n\n`))
      await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
  };
  const chunk = (
    delta: ChatCompletionChunk["choices"][0]["delta"],
    finish: ChatFinishReason | null,
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
    return send(JSON.stringify(body));
  };
  // With tools the text is read for calls as it comes: content passes on, calls go out as tool_calls deltas.
  const calls = plan.syntax === null ? null : new ToolCallStream(plan.syntax);
  const sendText = async (events: ToolCallEvent[]) => {
    for (const event of events) {
      if (event.type === "content") await chunk({ content: event.text }, null);
      else await chunk({ tool_calls: [toolCallDelta(event)] }, null);
    }
  };
  try {
    await chunk({ role: "assistant", content: "" }, null);
    for (;;) {
      if (next.done) {
        onResult?.(next.value);
        if (calls !== null) await sendText(calls.end());
        const called = calls !== null && calls.callCount > 0 && calls.complete;
        await chunk({}, finishReason(next.value.finishReason, called), next.value);
        break;
      }
      const text = next.value.text;
      if (text !== "") {
        if (calls === null) await chunk({ content: text }, null);
        else await sendText(calls.push(text));
      }
      next = await generation.next();
    }
  } catch (error) {
    const message = (error as Error).message;
    await send(
      JSON.stringify({ error: { message, type: "server_error", param: null, code: "generation_failed" } }),
    );
  }
  await send("[DONE]");
  res.end();
  return RESPONSE_ALREADY_SENT;
}
