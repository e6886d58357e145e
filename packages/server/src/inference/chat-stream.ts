// A chat answer streamed as SSE chat.completion.chunk lines ending in
// `data: [DONE]`: each of the `n` choices streams its own chunks (index i)
// as its tokens come, tool calls as tool_calls deltas, and each token's
// logprob in the chunk that carries its text (a token whose text is held
// back, a stop string's start or part of a character, goes with the next
// chunk of its choice), so the stream's logprobs are the non-streamed ones.
import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import {
  type GenerationChunk,
  type GenerationResult,
  type ToolCallEvent,
  ToolCallStream,
  type ToolSyntax,
} from "@svc/engine";
import type { ChatCompletionChunk, ChatFinishReason, ChatTokenLogprob, ToolCallDelta } from "@svc/wire";
import { abandon, type ChatStream, finishReason, totalUsage, usageOf, wireLogprob } from "./chat-choices.js";
import type { ChatParams } from "./chat-completions.js";

export interface StreamMeta {
  id: string;
  created: number;
  model: string;
  /** The syntax tool calls are read with; null when the text is not read for calls. */
  syntax: ToolSyntax | null;
  wantLogprobs: boolean;
  streamUsage: ChatParams["streamUsage"];
}

/** A streamed tool-call event as OpenAI's chunk delta. */
function toolCallDelta(event: Exclude<ToolCallEvent, { type: "content" }>): ToolCallDelta {
  return event.type === "call"
    ? { index: event.index, id: event.id, type: "function", function: { name: event.name, arguments: "" } }
    : { index: event.index, function: { arguments: event.text } };
}

type Delta = ChatCompletionChunk["choices"][0]["delta"];

export async function streamChat(
  res: ServerResponse,
  generations: ChatStream[],
  meta: StreamMeta,
  onResult?: (result: GenerationResult) => void,
): Promise<Response> {
  // The first results come before the headers, so a request the model refuses
  // (the prompt does not fit the context) is an HTTP error, not an error chunk.
  let firsts: IteratorResult<GenerationChunk, GenerationResult>[];
  try {
    firsts = await Promise.all(generations.map((g) => g.next()));
  } catch (error) {
    await abandon(generations);
    throw error;
  }
  // Streamed straight to the Node response (no web-stream layers per chunk).
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  // One write at a time (the choices stream concurrently), each waiting for the client to drain.
  let writes = Promise.resolve();
  const write = async (data: string) => {
    if (res.writableEnded || res.destroyed) return;
    if (!res.write(`data: ${data}\n\n`))
      await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
  };
  const send = (data: string) => {
    writes = writes.then(() => write(data));
    return writes;
  };
  const chunk = (
    index: number,
    delta: Delta,
    finish: ChatFinishReason | null,
    logprobs: ChatTokenLogprob[] | null,
    usage?: GenerationResult,
  ) => {
    const body: ChatCompletionChunk = {
      id: meta.id,
      object: "chat.completion.chunk",
      created: meta.created,
      model: meta.model,
      choices: [
        {
          index,
          delta,
          logprobs: logprobs === null || logprobs.length === 0 ? null : { content: logprobs, refusal: null },
          finish_reason: finish,
        },
      ],
    };
    if (meta.streamUsage === "own_chunk") body.usage = null;
    if (usage) body.usage = usageOf(usage);
    return send(JSON.stringify(body));
  };

  const results: (GenerationResult | null)[] = generations.map(() => null);
  let finished = 0;
  const pump = async (index: number) => {
    const generation = generations[index];
    let next = firsts[index] as IteratorResult<GenerationChunk, GenerationResult>;
    // Logprobs of tokens whose text has not gone out yet.
    let pending: ChatTokenLogprob[] = [];
    const take = () => {
      if (!meta.wantLogprobs) return null;
      const taken = pending;
      pending = [];
      return taken;
    };
    // With tools the text is read for calls as it comes: content passes on, calls go out as tool_calls deltas.
    const calls = meta.syntax === null ? null : new ToolCallStream(meta.syntax);
    const sendEvents = async (events: ToolCallEvent[]) => {
      for (const event of events) {
        if (event.type === "content") await chunk(index, { content: event.text }, null, take());
        else await chunk(index, { tool_calls: [toolCallDelta(event)] }, null, take());
      }
    };
    await chunk(index, { role: "assistant", content: "" }, null, null);
    for (;;) {
      if (next.done) {
        results[index] = next.value;
        if (calls !== null) await sendEvents(calls.end());
        const called = calls !== null && calls.callCount > 0 && calls.complete;
        // svc's own API reports the request's usage on the chunk that ends its last choice.
        const last = ++finished === generations.length && meta.streamUsage === "last_chunk";
        const usage = last ? totalUsage(results as GenerationResult[]) : undefined;
        await chunk(index, {}, finishReason(next.value.finishReason, called), take(), usage);
        return;
      }
      if (next.value.logprob) pending.push(wireLogprob(next.value.logprob));
      const text = next.value.text;
      if (text !== "") {
        if (calls === null) await chunk(index, { content: text }, null, take());
        else await sendEvents(calls.push(text));
      }
      next = await generation.next();
    }
  };
  try {
    await Promise.all(generations.map((_, index) => pump(index)));
    const usage = totalUsage(results as GenerationResult[]);
    onResult?.(usage);
    if (meta.streamUsage === "own_chunk") {
      const body: ChatCompletionChunk = {
        id: meta.id,
        object: "chat.completion.chunk",
        created: meta.created,
        model: meta.model,
        choices: [],
        usage: usageOf(usage),
      };
      await send(JSON.stringify(body));
    }
  } catch (error) {
    await abandon(generations);
    const message = (error as Error).message;
    await send(
      JSON.stringify({ error: { message, type: "server_error", param: null, code: "generation_failed" } }),
    );
  }
  await send("[DONE]");
  res.end();
  return RESPONSE_ALREADY_SENT;
}
