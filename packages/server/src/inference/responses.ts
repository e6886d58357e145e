// POST /v1/responses answered from a chat generation: a Response object with
// `output` items (an assistant message with output_text, function_call items
// read from the text with the model's tool syntax), or, streamed, OpenAI's
// semantic events (response.created … response.output_text.delta …
// response.completed) as SSE `event:` / `data:` lines. With include
// message.output_text.logprobs the output_text carries its tokens' logprobs,
// streamed in the delta that carries each token's text (as chat-stream.ts
// does), so a stream's logprobs are the whole answer's. Nothing is stored.
import { randomUUID } from "node:crypto";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import {
  type GenerationChunk,
  type GenerationResult,
  parseToolCalls,
  type ToolCallEvent,
  ToolCallStream,
} from "@svc/engine";
import type { ChatTokenLogprob } from "@svc/wire";
import type { Context } from "hono";
import { abandon, wireLogprob } from "./chat-choices.js";
import { checkPromptFits, nodeResponse } from "./chat-completions.js";
import { planTools } from "./chat-tools.js";
import type { ChatGeneration } from "./inference-protocol.js";
import type { InferenceService, ResolvedTarget } from "./inference-service.js";
import type { ResponsesRequest } from "./responses-request.js";

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`;

type MessageItem = {
  type: "message";
  id: string;
  status: "in_progress" | "completed";
  role: "assistant";
  content: { type: "output_text"; text: string; annotations: []; logprobs: ChatTokenLogprob[] }[];
};
type CallItem = {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: "in_progress" | "completed";
};
type OutputItem = MessageItem | CallItem;

const textPart = (text: string, logprobs: ChatTokenLogprob[] = []) => ({
  type: "output_text" as const,
  text,
  annotations: [] as [],
  logprobs,
});
const messageItem = (
  text: string,
  status: MessageItem["status"] = "completed",
  logprobs: ChatTokenLogprob[] = [],
): MessageItem => ({
  type: "message",
  id: newId("msg"),
  status,
  role: "assistant",
  content: status === "completed" ? [textPart(text, logprobs)] : [],
});

/** The Response object: what the request asked for, echoed as OpenAI does, and what came of it. */
function responseObject(
  meta: { id: string; created: number; model: string },
  request: ResponsesRequest,
  output: OutputItem[],
  result: GenerationResult | null,
) {
  const { params, echo } = request;
  const incomplete = result?.finishReason === "length";
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created,
    status: result === null ? "in_progress" : incomplete ? "incomplete" : "completed",
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    model: meta.model,
    output,
    parallel_tool_calls: params.parallelToolCalls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: params.temperature ?? 1,
    text: { format: echo.textFormat },
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_logprobs: echo.topLogprobs,
    top_p: params.topP ?? 1,
    truncation: "disabled",
    usage:
      result === null
        ? null
        : {
            input_tokens: result.promptTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: result.completionTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: result.promptTokens + result.completionTokens,
          },
    metadata: echo.metadata,
  };
}

/** Runs the request on the target and answers with a Response, or with its events when streaming. */
export async function respondWithResponse(
  c: Context,
  inference: InferenceService,
  target: ResolvedTarget,
  request: ResponsesRequest,
  onResult?: (result: GenerationResult) => void,
): Promise<Response> {
  const meta = { id: newId("resp"), created: Math.floor(Date.now() / 1000), model: target.label };
  const prepared = await inference.prepare(target);
  const { params } = request;
  checkPromptFits(params, prepared.limits);
  const plan = planTools(params, prepared.limits.toolSyntax, params.toolsField);
  const chat: ChatGeneration = {
    messages: params.messages,
    temperature: params.temperature,
    topP: params.topP,
    maxTokens: params.maxTokens,
    maxTokensPolicy: params.maxTokensPolicy,
    tools: params.tools,
    logprobs: params.logprobs,
  };
  if (plan.grammar !== undefined) chat.grammar = plan.grammar;
  const res = nodeResponse(c);
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  const generation = prepared.generate(chat, controller.signal);
  if (!params.stream) {
    let result: GenerationResult;
    const logprobs: ChatTokenLogprob[] = [];
    try {
      for (;;) {
        const next = await generation.next();
        if (next.done) {
          result = next.value;
          break;
        }
        if (next.value.logprob) logprobs.push(wireLogprob(next.value.logprob));
      }
    } catch (error) {
      await abandon([generation]);
      throw error;
    }
    onResult?.(result);
    const parsed = plan.syntax === null ? null : parseToolCalls(plan.syntax, result.text);
    const calls = parsed?.toolCalls ?? [];
    const content = calls.length > 0 ? (parsed?.content ?? "") : result.text;
    // The parser refuses logprobs where the text is read for calls: every token is the message's.
    const output: OutputItem[] =
      calls.length > 0 && content === "" ? [] : [messageItem(content, "completed", logprobs)];
    for (const call of calls)
      output.push({
        type: "function_call",
        id: newId("fc"),
        call_id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        status: "completed",
      });
    return c.json(responseObject(meta, request, output, result));
  }

  // The first result comes before the headers, so a refused prompt is an HTTP error, not an event.
  let next: IteratorResult<GenerationChunk, GenerationResult>;
  try {
    next = await generation.next();
  } catch (error) {
    await abandon([generation]);
    throw error;
  }
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  let sequence = 0;
  const send = async (type: string, payload: Record<string, unknown>) => {
    if (res.writableEnded || res.destroyed) return;
    const data = JSON.stringify({ type, sequence_number: sequence++, ...payload });
    if (!res.write(`event: ${type}\ndata: ${data}\n\n`))
      await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
  };
  const output: OutputItem[] = [];
  let open: { index: number; item: OutputItem } | null = null;
  const close = async () => {
    if (open === null) return;
    const { index, item } = open;
    open = null;
    item.status = "completed";
    if (item.type === "message") {
      const part = item.content[0] ?? textPart("");
      const at = { item_id: item.id, output_index: index, content_index: 0 };
      await send("response.output_text.done", { ...at, text: part.text, logprobs: part.logprobs });
      await send("response.content_part.done", { ...at, part });
    } else {
      await send("response.function_call_arguments.done", {
        item_id: item.id,
        output_index: index,
        name: item.name,
        arguments: item.arguments,
      });
    }
    await send("response.output_item.done", { output_index: index, item });
  };
  const openItem = async (item: OutputItem) => {
    await close();
    const index = output.length;
    output.push(item);
    open = { index, item };
    await send("response.output_item.added", { output_index: index, item: { ...item } });
    if (item.type === "message") {
      item.content = [textPart("")];
      await send("response.content_part.added", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: textPart(""),
      });
    }
  };
  // Logprobs of tokens whose text has not gone out yet (part of a character, a possible stop string).
  let pending: ChatTokenLogprob[] = [];
  const content = async (text: string) => {
    if (open?.item.type !== "message") await openItem(messageItem("", "in_progress"));
    const { index, item } = open as unknown as { index: number; item: MessageItem };
    const logprobs = pending;
    pending = [];
    item.content[0].text += text;
    item.content[0].logprobs.push(...logprobs);
    await send("response.output_text.delta", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: text,
      logprobs,
    });
  };
  const onEvent = async (event: ToolCallEvent) => {
    if (event.type === "content") return content(event.text);
    if (event.type === "call")
      return openItem({
        type: "function_call",
        id: newId("fc"),
        call_id: event.id,
        name: event.name,
        arguments: "",
        status: "in_progress",
      });
    const item = open?.item;
    if (item?.type !== "function_call") return;
    item.arguments += event.text;
    await send("response.function_call_arguments.delta", {
      item_id: item.id,
      output_index: (open as unknown as { index: number }).index,
      delta: event.text,
    });
  };
  const calls = plan.syntax === null ? null : new ToolCallStream(plan.syntax);
  try {
    const started = responseObject(meta, request, [], null);
    await send("response.created", { response: started });
    await send("response.in_progress", { response: started });
    for (;;) {
      if (next.done) break;
      if (next.value.logprob) pending.push(wireLogprob(next.value.logprob));
      const text = next.value.text;
      if (text !== "") {
        if (calls === null) await content(text);
        else for (const event of calls.push(text)) await onEvent(event);
      }
      next = await generation.next();
    }
    const result = next.value;
    onResult?.(result);
    if (calls !== null) for (const event of calls.end()) await onEvent(event);
    // Tokens whose text never went out (held back to the end) still report their logprobs.
    if (output.length === 0 || pending.length > 0) await content("");
    await close();
    const done = responseObject(meta, request, output, result);
    await send(done.status === "incomplete" ? "response.incomplete" : "response.completed", {
      response: done,
    });
  } catch (error) {
    await abandon([generation]);
    await send("error", { code: "generation_failed", message: (error as Error).message, param: null });
  }
  res.end();
  return RESPONSE_ALREADY_SENT;
}
