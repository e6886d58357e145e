// Wire types of inference (/v1/inference/chat) and the OpenAI chat completion
// objects svc produces (the subset it serves).

import type { AdapterRef } from "./common.js";
import type { ResponseFormat, ToolCall, ToolCallDelta, ToolChoice, ToolDefinition } from "./tools.js";

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  /** null (or absent) for an assistant message that only calls tools. */
  content: string | null;
  /** Assistant messages: the tools it called. */
  tool_calls?: ToolCall[];
  /** Tool messages: the call this result answers. */
  tool_call_id?: string;
  name?: string;
}

/** POST /v1/inference/chat */
export interface InferArgs {
  messages: ChatMessage[];
  adapter?: AdapterRef;
  baseModel?: string;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string | string[];
  seed?: number;
  stream?: boolean;
  /** Functions the model may call (docs/tools.md). */
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  /** Several calls in one answer (default true). */
  parallelToolCalls?: boolean;
  /** JSON output enforced by constrained decoding (docs/tools.md#structured-output). */
  responseFormat?: ResponseFormat;
  /** Completions sampled together, 1 to 16 (docs/api.md#chat-parameters). */
  n?: number;
  /** Each token's logprob, with topLogprobs (0 to 20) alternatives. */
  logprobs?: boolean;
  topLogprobs?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** Token id → bias in [-100, 100]. */
  logitBias?: Record<string, number>;
}

/** One token of OpenAI's logprobs.content (docs/api.md#logprobs). */
export interface ChatTopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}
export interface ChatTokenLogprob extends ChatTopLogprob {
  top_logprobs: ChatTopLogprob[];
}
/** A choice's logprobs: null where the request did not ask for them. */
export type ChatLogprobs = { content: ChatTokenLogprob[]; refusal: null } | null;

/** Why a generation ended: "tool_calls" when the answer calls tools. */
export type ChatFinishReason = "stop" | "length" | "tool_calls";

/** OpenAI chat.completion object (the subset we produce). */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: "assistant"; content: string | null; tool_calls?: ToolCall[] };
    finish_reason: ChatFinishReason;
    logprobs?: ChatLogprobs;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** OpenAI chat.completion.chunk object (the subset we produce). */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string | null; tool_calls?: ToolCallDelta[] };
    finish_reason: ChatFinishReason | null;
    logprobs?: ChatLogprobs;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}
