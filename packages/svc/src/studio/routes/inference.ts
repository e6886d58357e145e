// /api/inference/chat: the Playground's streaming chat. The answer is NDJSON:
// one {"delta": "..."} line per text piece, and {"error": {...}} if the stream
// breaks after it started (before that, errors keep their HTTP status). With
// tools the chat is answered whole: a {"delta"} line with the text, if any,
// and a {"toolCalls": [...]} line with the calls (docs/tools.md). tools,
// toolChoice, parallelToolCalls and responseFormat go upstream as they are;
// the cloud API checks them and its 400s keep their status.
import type {
  AdapterRef,
  ChatMessage,
  InferArgs,
  ResponseFormat,
  StudioChatLine,
  ToolChoice,
  ToolDefinition,
} from "@svc/wire";
import { Hono } from "hono";
import { ensuredProjectSession } from "../cloud-session.js";
import type { StudioEnv } from "../env.js";
import { errorBody, errorStatus, StudioError } from "../errors.js";
import { jsonObjectBody } from "./deployments.js";

const ROLES = new Set(["system", "user", "assistant", "tool"]);

/** Checks the browser's body field by field and builds the InferArgs sent upstream. */
export function parseChatBody(body: Record<string, unknown>): InferArgs {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new StudioError(400, "invalid_request", "messages: expected a non-empty array");
  }
  messages.forEach((m, i) => {
    const msg = m as Partial<ChatMessage> | null;
    const calls = msg?.role === "assistant" && Array.isArray(msg.tool_calls);
    if (
      !msg ||
      typeof msg !== "object" ||
      !ROLES.has(msg.role as string) ||
      (typeof msg.content !== "string" && !(calls && (msg.content === null || msg.content === undefined)))
    ) {
      throw new StudioError(
        400,
        "invalid_request",
        `messages[${i}]: expected { role, content } with a string content`,
      );
    }
  });
  const args: InferArgs = { messages: messages as ChatMessage[] };
  if (body.adapter !== undefined) args.adapter = body.adapter as AdapterRef;
  if (body.baseModel !== undefined) {
    if (typeof body.baseModel !== "string")
      throw new StudioError(400, "invalid_request", "baseModel: expected a string");
    args.baseModel = body.baseModel;
  }
  for (const k of ["temperature", "topP", "maxTokens", "seed"] as const) {
    if (body[k] === undefined) continue;
    if (typeof body[k] !== "number" || !Number.isFinite(body[k])) {
      throw new StudioError(400, "invalid_request", `${k}: expected a number`);
    }
    args[k] = body[k] as number;
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw new StudioError(400, "invalid_request", "tools: expected an array");
    args.tools = body.tools as ToolDefinition[];
  }
  if (body.toolChoice !== undefined) args.toolChoice = body.toolChoice as ToolChoice;
  if (body.parallelToolCalls !== undefined) args.parallelToolCalls = body.parallelToolCalls as boolean;
  if (body.responseFormat !== undefined) args.responseFormat = body.responseFormat as ResponseFormat;
  return args;
}

export function inferenceRoutes(env: StudioEnv): Hono {
  const app = new Hono();

  app.post("/chat", async (c) => {
    const args = parseChatBody(await jsonObjectBody(c));
    const s = await ensuredProjectSession(env.projectDir);
    const ndjson = { "Content-Type": "application/x-ndjson; charset=utf-8", "Cache-Control": "no-cache" };
    if (args.tools?.length) {
      const message = (await s.client.infer(args)).choices[0]?.message;
      const lines: StudioChatLine[] = [
        ...(message?.content ? [{ delta: message.content }] : []),
        ...(message?.tool_calls?.length ? [{ toolCalls: message.tool_calls }] : []),
      ];
      return new Response(lines.map((l) => `${JSON.stringify(l)}\n`).join(""), { headers: ndjson });
    }
    const deltas = s.client.inferStream(args, { signal: c.req.raw.signal })[Symbol.asyncIterator]();
    // Wait for the first piece so an upstream refusal still answers with its own status.
    const first = await deltas.next();
    const encoder = new TextEncoder();
    const line = (v: StudioChatLine) => encoder.encode(`${JSON.stringify(v)}\n`);
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          if (!first.done) controller.enqueue(line({ delta: first.value }));
          for (let r = first.done ? first : await deltas.next(); !r.done; r = await deltas.next()) {
            controller.enqueue(line({ delta: r.value }));
          }
        } catch (err) {
          const { code, message } = errorStatus(err);
          if (!c.req.raw.signal.aborted) controller.enqueue(line(errorBody(code, message)));
        }
        controller.close();
      },
      async cancel() {
        await deltas.return?.();
      },
    });
    return new Response(body, { headers: ndjson });
  });

  return app;
}
