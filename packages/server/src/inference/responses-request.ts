// The parser of a Responses API request (POST /v1/responses), for the edge
// and the cloud API: `input` (a string or a list of items) and
// `instructions` become the chat messages, function `tools`, `tool_choice`
// and `text.format` become the chat request's tools and response format, so
// the generation is the chat completions' (chat-completions.ts). Each
// parameter is honoured, accepted, or refused with 400 naming it; an unknown
// key is refused too (docs/api.md#responses-parameters). svc stores no
// response, so `previous_response_id` is refused.
import {
  type ChatMessage,
  type ResponseFormat,
  SAMPLING_RANGES,
  type ToolChoice,
  type ToolDefinition,
} from "@svc/wire";
import { badRequest } from "../http/api-error.js";
import {
  array,
  boolean,
  type Check,
  describe,
  inRange,
  literal,
  nullable,
  number,
  object,
  oneOf,
  optional,
  string,
} from "../http/validate.js";
import type { ChatParams } from "./chat-completions.js";
import { metadataCheck, refused } from "./chat-params.js";
import {
  checkToolRequest,
  engineMessages,
  FUNCTION_NAME,
  MAX_CONTENT,
  MAX_TOOLS,
  messagesCheck,
  schemaCheck,
} from "./chat-request.js";

const MAX_ITEMS = 500;
const text = () => string({ max: MAX_CONTENT, allowNul: true });
const notText = refused(
  "svc serves text models; content parts are input_text (output_text for assistant turns)",
);

/** A message's content: a string, or text parts (input_text; output_text or refusal in an assistant turn). */
const contentCheck: Check<string> = (value, path) => {
  if (typeof value === "string") return text()(value, path);
  if (!Array.isArray(value)) throw badRequest(`"${path}" must be a string or an array of content parts`);
  return array((part, p) => {
    const type = (part as { type?: unknown } | null)?.type;
    if (type === "input_text") return object({ type: literal("input_text"), text: text() })(part, p).text;
    if (type === "output_text")
      return object({
        type: literal("output_text"),
        text: text(),
        annotations: optional(array(() => null, { max: 0 })),
        logprobs: optional(array(() => null)),
      })(part, p).text;
    if (type === "refusal") return object({ type: literal("refusal"), refusal: text() })(part, p).refusal;
    return notText(part, `${p}.type`);
  })(value, path).join("");
};

const status = optional(oneOf(["in_progress", "completed", "incomplete"]));

type InputItem =
  | { kind: "message"; role: ChatMessage["role"]; content: string }
  | { kind: "call"; callId: string; name: string; arguments: string }
  | { kind: "output"; callId: string; output: string };

const itemCheck: Check<InputItem> = (value, path) => {
  const item = (value ?? {}) as { type?: unknown; role?: unknown };
  const type = item.type ?? (item.role !== undefined ? "message" : undefined);
  if (type === "message") {
    const m = object({
      type: optional(literal("message")),
      id: optional(string({ max: 256 })),
      status,
      role: oneOf(["user", "system", "developer", "assistant"]),
      content: contentCheck,
    })(value, path);
    return { kind: "message", role: m.role === "developer" ? "system" : m.role, content: m.content };
  }
  if (type === "function_call") {
    const call = object({
      type: literal("function_call"),
      id: optional(string({ max: 256 })),
      status,
      call_id: string({ min: 1, max: 256 }),
      name: string(FUNCTION_NAME),
      arguments: string({ max: MAX_CONTENT, allowNul: true }),
    })(value, path);
    try {
      JSON.parse(call.arguments);
    } catch {
      throw badRequest(`"${path}.arguments" must be JSON text`);
    }
    return { kind: "call", callId: call.call_id, name: call.name, arguments: call.arguments };
  }
  if (type === "function_call_output") {
    const out = object({
      type: literal("function_call_output"),
      id: optional(string({ max: 256 })),
      status,
      call_id: string({ min: 1, max: 256 }),
      output: contentCheck,
    })(value, path);
    return { kind: "output", callId: out.call_id, output: out.output };
  }
  if (typeof type !== "string") throw badRequest(`"${path}" must be a message or a function call item`);
  throw badRequest(
    `"${path}.type" ${JSON.stringify(type)} is not supported: items are messages, function_call and function_call_output`,
    "unsupported_parameter",
  );
};

/** The input as chat messages: consecutive function calls form one assistant turn, each output a tool message. */
function toMessages(input: InputItem[], path: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const calls = new Set<string>();
  input.forEach((item, i) => {
    if (item.kind === "message") {
      messages.push({ role: item.role, content: item.content });
    } else if (item.kind === "call") {
      calls.add(item.callId);
      const call = {
        id: item.callId,
        type: "function" as const,
        function: { name: item.name, arguments: item.arguments },
      };
      const last = messages[messages.length - 1];
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else {
      if (!calls.has(item.callId))
        throw badRequest(
          `"${path}[${i}].call_id" ${JSON.stringify(item.callId)} answers no function_call earlier in the input`,
        );
      messages.push({ role: "tool", tool_call_id: item.callId, content: item.output });
    }
  });
  return messages;
}

const inputCheck: Check<InputItem[]> = (value, path) =>
  typeof value === "string"
    ? [{ kind: "message", role: "user", content: text()(value, path) }]
    : array(itemCheck, { min: 1, max: MAX_ITEMS })(value, path);

const toolCheck: Check<ToolDefinition> = (value, path) => {
  const type = (value as { type?: unknown } | null)?.type;
  if (type !== "function")
    throw badRequest(
      `"${path}.type" must be "function": svc's models call functions only (got ${type === undefined ? describe(value) : JSON.stringify(type)})`,
      "unsupported_parameter",
    );
  const tool = object({
    type: literal("function"),
    name: string(FUNCTION_NAME),
    description: optional(nullable(string({ max: 10_000 }))),
    parameters: optional(nullable(schemaCheck)),
    strict: optional(nullable(boolean())),
  })(value, path);
  const fn: ToolDefinition["function"] = { name: tool.name };
  if (tool.description != null) fn.description = tool.description;
  if (tool.parameters != null) fn.parameters = tool.parameters;
  if (tool.strict != null) fn.strict = tool.strict;
  return { type: "function", function: fn };
};

const toolChoiceCheck: Check<ToolChoice> = (value, path) => {
  if (typeof value === "string") return oneOf(["auto", "none", "required"])(value, path);
  const choice = object({ type: literal("function"), name: string({ min: 1 }) })(value, path);
  return { type: "function", function: { name: choice.name } };
};

const formatCheck: Check<ResponseFormat> = (value, path) => {
  const type = (value as { type?: unknown } | null)?.type;
  if (type === "json_schema") {
    const f = object({
      type: literal("json_schema"),
      name: string(FUNCTION_NAME),
      description: optional(string({ max: 10_000 })),
      schema: schemaCheck,
      strict: optional(nullable(boolean())),
    })(value, path);
    const json_schema: Extract<ResponseFormat, { type: "json_schema" }>["json_schema"] = {
      name: f.name,
      schema: f.schema,
    };
    if (f.description !== undefined) json_schema.description = f.description;
    if (f.strict != null) json_schema.strict = f.strict;
    return { type: "json_schema", json_schema };
  }
  if (type === "json_object") return object({ type: literal("json_object") })(value, path);
  if (type === "text") return object({ type: literal("text") })(value, path);
  throw badRequest(`"${path}.type" must be one of "text", "json_object", "json_schema"`);
};

/** What `include` may ask for: the output text's logprobs; svc has none of the other outputs (search results, images, reasoning). */
const LOGPROBS = "message.output_text.logprobs";
const includeCheck: Check<string> = (value, path) =>
  value === LOGPROBS
    ? value
    : refused(`the only extra output svc has is ${JSON.stringify(LOGPROBS)}`)(value, path);

const SHAPE = {
  model: optional(string()),
  input: inputCheck,
  instructions: optional(text()),
  max_output_tokens: optional(inRange(SAMPLING_RANGES.maxTokens)),
  temperature: optional(number(SAMPLING_RANGES.temperature)),
  top_p: optional(number(SAMPLING_RANGES.topP)),
  tools: optional(array(toolCheck, { max: MAX_TOOLS })),
  tool_choice: optional(toolChoiceCheck),
  parallel_tool_calls: optional(boolean()),
  text: optional(
    object({
      format: optional(formatCheck),
      verbosity: optional(refused("svc's models have no verbosity setting")),
    }),
  ),
  stream: optional(boolean()),
  stream_options: optional(object({ include_obfuscation: optional(boolean()) })),
  // Accepted, never stored, as on chat completions.
  user: optional(string({ max: 512 })),
  safety_identifier: optional(string({ max: 512 })),
  prompt_cache_key: optional(string({ max: 1024 })),
  metadata: optional(metadataCheck),
  store: optional((value: unknown, path: string) =>
    value === true
      ? refused("svc does not store responses; send false")(value, path)
      : boolean()(value, path),
  ),
  previous_response_id: optional(
    refused("svc stores no responses to continue; send the whole conversation in input, with store: false"),
  ),
  conversation: optional(refused("svc stores no conversations; send the whole conversation in input")),
  background: optional((value: unknown, path: string) =>
    value === true ? refused("svc runs no background responses")(value, path) : boolean()(value, path),
  ),
  truncation: optional((value: unknown, path: string) =>
    value === "disabled"
      ? value
      : refused('svc never drops input to fit the context; the only truncation is "disabled"')(value, path),
  ),
  include: optional(array(includeCheck, { max: 16 })),
  service_tier: optional((value: unknown, path: string) =>
    value === "auto" || value === "default"
      ? value
      : refused('every request is served alike; the tiers are "auto" and "default"')(value, path),
  ),
  reasoning: optional(refused("svc's models have no reasoning settings")),
  prompt: optional(refused("svc stores no prompt templates")),
  top_logprobs: optional(number(SAMPLING_RANGES.topLogprobs)),
  max_tool_calls: optional(refused("svc does not cap tool calls; parallel_tool_calls: false allows one")),
};

/** The Responses API's parameter names (docs/api.md lists them; a test keeps the two alike). */
export const RESPONSES_PARAMETERS = Object.keys(SHAPE);

export interface ResponsesRequest {
  params: ChatParams;
  /** The `model` asked for (the edge ignores it: the deployment pins its model). */
  model?: string;
  /** Echoed in the response object, as OpenAI does. */
  echo: {
    instructions: string | null;
    maxOutputTokens: number | null;
    metadata: Record<string, string>;
    tools: unknown[];
    toolChoice: unknown;
    textFormat: unknown;
    topLogprobs: number | null;
  };
}

/** Parses a /v1/responses body into a chat generation; refusals start with the parameter's path in quotes. */
export async function parseResponsesRequest(body: unknown): Promise<ResponsesRequest> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest(`"body" must be a JSON object (got ${describe(body)})`);
  const present: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (value !== null) present[key] = value;
  const r = object(SHAPE)(present, "");
  const messages = toMessages(r.input, "input");
  if (r.instructions !== undefined) messages.unshift({ role: "system", content: r.instructions });
  // The conversation's rules (a tool result answers a call, lengths) are the chat's.
  messagesCheck(messages, "input");
  const tooling = {
    tools: r.tools,
    toolChoice: r.tool_choice,
    parallelToolCalls: r.parallel_tool_calls,
    responseFormat: r.text?.format,
  };
  await checkToolRequest(tooling, {
    tools: "tools",
    toolChoice: "tool_choice",
    responseFormat: "text.format",
    toolParameters: (i) => `tools[${i}].parameters`,
    formatSchema: "text.format.schema",
  });
  const logprobs = r.include?.includes(LOGPROBS) ?? false;
  if (r.top_logprobs !== undefined && !logprobs)
    throw badRequest(`"top_logprobs" needs "include": [${JSON.stringify(LOGPROBS)}]`);
  // Logprobs belong to the output_text; a text read for function calls has no token boundary between the two.
  if (logprobs && (r.tools?.length ?? 0) > 0 && r.tool_choice !== "none")
    throw badRequest(
      `"include" ${JSON.stringify(LOGPROBS)} is not supported with tools the model may call; send tool_choice: "none", or ask /v1/chat/completions for logprobs`,
      "unsupported_parameter",
    );
  const params: ChatParams = {
    ...tooling,
    toolsField: "tools",
    logitBiasField: "logit_bias",
    messages: engineMessages(messages),
    temperature: r.temperature,
    topP: r.top_p,
    maxTokens: r.max_output_tokens,
    logprobs: logprobs ? (r.top_logprobs ?? 0) : undefined,
    n: 1,
    stream: r.stream ?? false,
    streamUsage: "none",
    maxTokensPolicy: r.max_output_tokens === undefined ? undefined : "refuse",
  };
  return {
    params,
    model: r.model,
    echo: {
      instructions: r.instructions ?? null,
      maxOutputTokens: r.max_output_tokens ?? null,
      metadata: r.metadata ?? {},
      tools: (present.tools as unknown[] | undefined) ?? [],
      toolChoice: present.tool_choice ?? "auto",
      textFormat:
        r.text?.format === undefined ? { type: "text" } : (present.text as { format: unknown }).format,
      topLogprobs: r.top_logprobs ?? null,
    },
  };
}
