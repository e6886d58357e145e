// infer(): chat with a job's final adapter, one of its checkpoints, or a base model.
import type {
  ChatCompletion,
  ChatFinishReason,
  ChatMessage,
  ResponseFormat,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  InferArgs as WireInferArgs,
} from "@svc/wire";
import type { CloudApi } from "./cloud-api.js";
import { openScopedSession } from "./session.js";

export interface InferOptions {
  messages: ChatMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string | string[];
  seed?: number;
  /** Functions the model may call (docs/tools.md); the result's toolCalls holds the calls it makes. */
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  /** JSON output enforced by constrained decoding: { type: "json_object" } or { type: "json_schema", json_schema }. */
  responseFormat?: ResponseFormat;
  /** With stream: true and tools: gets each tool call whole (the stream itself yields the text). Required then, so no call is dropped unseen. */
  onToolCall?: (call: ToolCall) => void;
  signal?: AbortSignal;
}

/** Which weights answer: exactly one of adapter (final or checkpoint) or baseModel. */
export type InferTarget = Pick<WireInferArgs, "adapter" | "baseModel">;

export interface InferResult {
  /** The answer's text ("" when the model only calls tools). */
  text: string;
  /** The tools the model calls (empty when none); finishReason is then "tool_calls". */
  toolCalls: ToolCall[];
  finishReason: ChatFinishReason;
  completion: ChatCompletion;
}

export type InferRequest = InferOptions & InferTarget;

/** Chat bound to one target, e.g. the checkpoint handed to onCheckpoint. */
export interface BoundInfer {
  (args: InferOptions & { stream: true }): AsyncIterable<string>;
  (args: InferOptions & { stream?: false }): Promise<InferResult>;
}

export function infer(args: InferRequest & { stream: true }): AsyncIterable<string>;
export function infer(args: InferRequest & { stream?: false }): Promise<InferResult>;
export function infer(
  args: InferRequest & { stream?: boolean },
): AsyncIterable<string> | Promise<InferResult> {
  validateInferArgs(args);
  if (args.stream) {
    return {
      async *[Symbol.asyncIterator]() {
        const { scoped } = await openScopedSession();
        yield* scoped.inferStream(wireArgs(args), { signal: args.signal, onToolCall: args.onToolCall });
      },
    };
  }
  return openScopedSession().then(({ scoped }) => inferWith(scoped, args));
}

export function bindInfer(client: CloudApi, target: InferTarget): BoundInfer {
  return ((args: InferOptions & { stream?: boolean }) => {
    const full = { ...args, ...target };
    validateInferArgs(full);
    if (args.stream)
      return client.inferStream(wireArgs(full), { signal: args.signal, onToolCall: args.onToolCall });
    return inferWith(client, full);
  }) as BoundInfer;
}

async function inferWith(client: CloudApi, args: InferRequest): Promise<InferResult> {
  const completion = await client.infer(wireArgs(args));
  const choice = completion.choices[0];
  return {
    text: choice?.message.content ?? "",
    toolCalls: choice?.message.tool_calls ?? [],
    finishReason: choice?.finish_reason ?? "stop",
    completion,
  };
}

function wireArgs(args: InferRequest & { stream?: boolean }): WireInferArgs {
  const {
    signal: _signal,
    onToolCall: _onToolCall,
    ...rest
  } = args as InferRequest & { stream?: boolean; signal?: AbortSignal };
  return rest;
}

function validateInferArgs(args: InferRequest & { stream?: boolean }): void {
  if (args.stream && args.tools?.length && args.toolChoice !== "none" && !args.onToolCall) {
    throw new TypeError(
      "infer: stream: true with tools needs onToolCall (the stream yields text; each call goes to onToolCall), or use stream: false",
    );
  }
  if (!Array.isArray(args.messages) || args.messages.length === 0) {
    throw new TypeError("messages: expected a non-empty array of { role, content }");
  }
  args.messages.forEach((m, i) => {
    // An assistant message that calls tools may have no content.
    const content =
      typeof m?.content === "string" || (m?.role === "assistant" && Array.isArray(m?.tool_calls));
    if (!content || !["system", "user", "assistant", "tool"].includes(m?.role)) {
      throw new TypeError(
        `messages[${i}]: expected { role: "system"|"user"|"assistant"|"tool", content: string }`,
      );
    }
  });
  if (Boolean(args.adapter) === Boolean(args.baseModel)) {
    throw new TypeError(
      'infer: give exactly one of adapter ({ kind: "final", jobId } | { kind: "checkpoint", jobId, step }) or baseModel',
    );
  }
}
