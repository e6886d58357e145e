// The checks of a chat request's messages, tools, tool_choice and
// response_format, shared by the cloud API's /v1/inference/chat and the edge's
// /v1/chat/completions: each answers 400 naming the field, and a JSON Schema
// outside the supported subset names its keyword (SchemaError).
import {
  checkToolSchemaInSlices,
  type ChatMessage as EngineMessage,
  newSchemaBudget,
  type SchemaBudget,
  SchemaError,
} from "@svc/engine";
import type { ChatMessage, ResponseFormat, ToolCall, ToolChoice, ToolDefinition } from "@svc/wire";
import { badRequest } from "../http/api-error.js";
import {
  array,
  boolean,
  type Check,
  describe,
  literal,
  nullable,
  object,
  oneOf,
  optional,
  string,
} from "../http/validate.js";

/** OpenAI's rule for function names. */
export const FUNCTION_NAME = {
  pattern: /^[a-zA-Z0-9_-]{1,64}$/,
  patternText: "1 to 64 letters, digits, _ or -",
};
export const MAX_TOOLS = 128;
export const MAX_CONTENT = 200_000;

/** A JSON Schema object; whether it is of the supported subset is checkToolRequest's work (it takes time). */
export const schemaCheck: Check<Record<string, unknown>> = (value, path) => {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw badRequest(`"${path}" must be a JSON Schema object (got ${describe(value)})`);
  return value as Record<string, unknown>;
};

/**
 * The schema at `path` is of the supported subset, else 400 naming its
 * keyword. It is compiled in slices, so other requests go on meanwhile. The
 * schemas compiled into one grammar (all of a request's tools) share `budget`,
 * so that a hundred tools cannot hold a hundred times what one schema may.
 */
async function checkSchema(schema: unknown, path: string, budget: SchemaBudget): Promise<void> {
  try {
    await checkToolSchemaInSlices(schema, budget);
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    throw badRequest(`"${path}" ${error.message}`, "unsupported_schema");
  }
}

const toolCallCheck: Check<ToolCall> = (value, path) => {
  const call = object({
    id: string({ min: 1, max: 256 }),
    type: literal("function"),
    function: object({
      name: string({ min: 1, max: 64 }),
      arguments: string({ max: MAX_CONTENT, allowNul: true }),
    }),
  })(value, path);
  try {
    JSON.parse(call.function.arguments);
  } catch {
    throw badRequest(`"${path}.function.arguments" must be JSON text`);
  }
  return call;
};

/** A message's content: a string, or an array of text parts ({ type: "text", text }) read as their joined text. */
const contentCheck: Check<string> = (value, path) => {
  const text = string({ max: MAX_CONTENT, allowNul: true });
  if (!Array.isArray(value)) return text(value, path);
  const joined = array(
    (part, p) => {
      const type = (part as { type?: unknown } | null)?.type;
      if (type !== "text")
        throw badRequest(
          `"${p}.type" ${type === undefined ? describe(part) : JSON.stringify(type)} is not supported: svc serves text models; content parts are "text"`,
          "unsupported_parameter",
        );
      return object({ type: literal("text"), text })(part, p).text;
    },
    { min: 1, max: 500 },
  )(value, path).join("");
  return text(joined, path);
};

const messageCheck: Check<ChatMessage> = (value, path) => {
  const message = object({
    // "developer" is OpenAI's newer name of the system role.
    role: oneOf(["system", "developer", "user", "assistant", "tool"]),
    content: optional(nullable(contentCheck)),
    name: optional(string({ max: 256 })),
    tool_calls: optional(array(toolCallCheck, { min: 1, max: MAX_TOOLS })),
    tool_call_id: optional(string({ min: 1, max: 256 })),
  })(value, path);
  // A tool result's name is the function's, which templates show; no template shows a participant's.
  if (message.name !== undefined && message.role !== "tool")
    throw badRequest(
      `"${path}.name" is not supported on ${message.role} messages: svc's chat templates do not show participant names; leave it out`,
      "unsupported_parameter",
    );
  if (message.tool_calls !== undefined && message.role !== "assistant")
    throw badRequest(`"${path}.tool_calls" is only allowed on assistant messages`);
  if (message.tool_call_id !== undefined && message.role !== "tool")
    throw badRequest(`"${path}.tool_call_id" is only allowed on tool messages`);
  if (message.role === "tool" && message.tool_call_id === undefined)
    throw badRequest(`"${path}.tool_call_id" is required`);
  // Content may be null or absent only where the message calls tools instead.
  if ((message.content === undefined || message.content === null) && message.tool_calls === undefined)
    throw badRequest(`"${path}.content" is required`);
  const role = message.role === "developer" ? "system" : message.role;
  return { ...message, role, content: message.content ?? null };
};

/** The conversation: tool messages answer a call an earlier assistant message made. */
export const messagesCheck: Check<ChatMessage[]> = (value, path) => {
  const messages = array(messageCheck, { min: 1, max: 500 })(value, path);
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    for (const call of m.tool_calls ?? []) calls.add(call.id);
    if (m.role === "tool" && !calls.has(m.tool_call_id as string))
      throw badRequest(
        `"${path}[${i}].tool_call_id" ${JSON.stringify(m.tool_call_id)} answers no tool call of an earlier assistant message`,
      );
  });
  return messages;
};

const toolCheck: Check<ToolDefinition> = object({
  type: literal("function"),
  function: object({
    name: string(FUNCTION_NAME),
    description: optional(string({ max: 10_000 })),
    parameters: optional(schemaCheck),
    strict: optional(nullable(boolean())),
  }),
}) as Check<ToolDefinition>;

export const toolsCheck: Check<ToolDefinition[]> = (value, path) => {
  const tools = array(toolCheck, { max: MAX_TOOLS })(value, path);
  const names = new Set<string>();
  tools.forEach((tool, i) => {
    if (tool.function.strict === null) delete tool.function.strict;
    if (names.has(tool.function.name))
      throw badRequest(
        `"${path}[${i}].function.name" ${JSON.stringify(tool.function.name)} is defined twice`,
      );
    names.add(tool.function.name);
  });
  return tools;
};

export const toolChoiceCheck: Check<ToolChoice> = (value, path) =>
  typeof value === "string"
    ? oneOf(["auto", "none", "required"])(value, path)
    : object({ type: literal("function"), function: object({ name: string({ min: 1 }) }) })(value, path);

export const responseFormatCheck: Check<ResponseFormat> = (value, path) => {
  const type = (value as { type?: unknown } | null)?.type;
  if (type === "json_schema")
    return object({
      type: literal("json_schema"),
      json_schema: object({
        name: string(FUNCTION_NAME),
        description: optional(string({ max: 10_000 })),
        schema: optional(schemaCheck),
        strict: optional(nullable(boolean())),
      }),
    })(value, path) as ResponseFormat;
  if (type === "json_object") return object({ type: literal("json_object") })(value, path);
  if (type === "text") return object({ type: literal("text") })(value, path);
  throw badRequest(`"${path}.type" must be one of "text", "json_object", "json_schema"`);
};

/** What a request asks of tools and output, after the checks that span fields. */
export interface ToolRequest {
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
}

/**
 * Checks that tool_choice fits the tools, then that every schema is of the
 * supported subset; `names` maps each option to its field name in this API.
 */
export async function checkToolRequest(
  request: ToolRequest,
  names: {
    tools: string;
    toolChoice: string;
    responseFormat: string;
    /** Where tool i's parameters schema sits in the request (default: chat's `tools[i].function.parameters`). */
    toolParameters?: (i: number) => string;
    /** Where the response format's schema sits (default: chat's `response_format.json_schema.schema`). */
    formatSchema?: string;
  },
): Promise<void> {
  const { tools, toolChoice, responseFormat } = request;
  if (toolChoice !== undefined && (tools === undefined || tools.length === 0)) {
    if (toolChoice !== "none") throw badRequest(`"${names.toolChoice}" needs "${names.tools}"`);
  } else if (
    typeof toolChoice === "object" &&
    !tools?.some((t) => t.function.name === toolChoice.function.name)
  ) {
    throw badRequest(
      `"${names.toolChoice}.function.name" ${JSON.stringify(toolChoice.function.name)} is not one of "${names.tools}"`,
    );
  }
  const toolsBudget = newSchemaBudget();
  for (const [i, tool] of (tools ?? []).entries()) {
    const { parameters } = tool.function;
    if (parameters !== undefined)
      await checkSchema(
        parameters,
        names.toolParameters?.(i) ?? `${names.tools}[${i}].function.parameters`,
        toolsBudget,
      );
  }
  if (responseFormat?.type === "json_schema" && responseFormat.json_schema.schema !== undefined)
    await checkSchema(
      responseFormat.json_schema.schema,
      names.formatSchema ?? `${names.responseFormat}.json_schema.schema`,
      newSchemaBudget(),
    );
}

/** The messages as the engine takes them: content "" where the wire has none. */
export function engineMessages(messages: ChatMessage[]): EngineMessage[] {
  return messages.map((m) => {
    const out: EngineMessage = { role: m.role, content: m.content ?? "" };
    if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined && m.role === "tool") out.name = m.name;
    return out;
  });
}
