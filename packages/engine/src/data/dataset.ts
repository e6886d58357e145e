// Training data as JSONL: one JSON object per non-empty line, either
//   {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}
// (OpenAI's chat fine-tuning format) or
//   {"prompt": "...", "completion": "..."}.
// A "messages" row may carry "tools" (function definitions whose "parameters"
// are JSON Schemas of the supported subset), assistant messages "tool_calls"
// (content null or absent when the message only calls), and "tool" messages
// the "tool_call_id" of the call they answer; every call names a tool of the
// row and its "arguments" are the JSON text of an object, as OpenAI sends them.
// The whole file is validated before anything is returned: the first bad line
// throws an EngineError("invalid_dataset") naming the file and line, so training
// never starts on a partly-read file. docs/datasets.md lists the rules.

import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { SchemaError } from "../constrained/index.js";
import { EngineError } from "../errors.js";
import { checkToolSchema } from "../text/tool-calls.js";
import type { ChatMessage, ChatRole, DatasetRow, ToolCall, ToolDefinition } from "../types.js";

const ROLES: readonly ChatRole[] = ["system", "user", "assistant", "tool"];
const MESSAGE_KEYS = ["role", "content", "name", "weight", "tool_calls", "tool_call_id"];
const ROW_KEYS = ["messages", "tools", "parallel_tool_calls"];
const TOOL_KEYS = ["type", "function"];
const FUNCTION_KEYS = ["name", "description", "parameters", "strict"];
const CALL_KEYS = ["id", "type", "function"];
const CALL_FUNCTION_KEYS = ["name", "arguments"];
/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A parsed message. `weight: 0` (OpenAI's per-message switch, assistant
 * messages only) keeps the message as context but excludes it from the loss.
 */
export interface DatasetMessage extends ChatMessage {
  weight?: 0 | 1;
}

/** Where a row is, for errors that name the file and line. */
export interface LineContext {
  source: string | undefined;
  file: string | undefined;
  line: number;
}

export function fail(context: LineContext, problem: string): never {
  const where =
    context.source === undefined ? `line ${context.line}` : `${context.source} line ${context.line}`;
  throw new EngineError("invalid_dataset", `${where}: ${problem}`, context.file, context.line);
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

export function requireString(value: unknown, path: string, context: LineContext): string {
  if (value === undefined) fail(context, `"${path}" is missing`);
  if (typeof value !== "string") fail(context, `"${path}" must be a string, got ${describe(value)}`);
  return value;
}

function requireObject(value: unknown, path: string, keys: string[], context: LineContext) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `"${path}" must be an object, got ${describe(value)}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!keys.includes(key))
      fail(context, `"${path}" has an unknown key "${key}" (allowed: ${keys.join(", ")})`);
  }
  return record;
}

function requireFunctionName(value: unknown, path: string, context: LineContext): string {
  const name = requireString(value, path, context);
  if (!FUNCTION_NAME.test(name)) {
    fail(context, `"${path}" must be 1 to 64 letters, digits, "_" or "-", got ${JSON.stringify(name)}`);
  }
  return name;
}

function parseTool(value: unknown, path: string, context: LineContext): ToolDefinition {
  const tool = requireObject(value, path, TOOL_KEYS, context);
  if (tool.type !== "function") fail(context, `"${path}.type" must be "function"`);
  const fn = requireObject(tool.function, `${path}.function`, FUNCTION_KEYS, context);
  const parsed: ToolDefinition = {
    type: "function",
    function: { name: requireFunctionName(fn.name, `${path}.function.name`, context) },
  };
  if (fn.description !== undefined) {
    parsed.function.description = requireString(fn.description, `${path}.function.description`, context);
  }
  if (fn.parameters !== undefined) {
    const parameters = fn.parameters;
    if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
      fail(
        context,
        `"${path}.function.parameters" must be a JSON Schema object, got ${describe(parameters)}`,
      );
    }
    try {
      checkToolSchema(parameters);
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      fail(context, `"${path}.function.parameters": ${error.message}`);
    }
    parsed.function.parameters = parameters as Record<string, unknown>;
  }
  if (fn.strict !== undefined) {
    if (typeof fn.strict !== "boolean") fail(context, `"${path}.function.strict" must be true or false`);
    parsed.function.strict = fn.strict;
  }
  return parsed;
}

export function parseTools(value: unknown, context: LineContext): ToolDefinition[] {
  if (!Array.isArray(value)) fail(context, `"tools" must be an array, got ${describe(value)}`);
  const tools = value.map((tool, i) => parseTool(tool, `tools[${i}]`, context));
  const names = new Set<string>();
  tools.forEach((tool, i) => {
    if (names.has(tool.function.name)) {
      fail(context, `"tools[${i}].function.name" ${JSON.stringify(tool.function.name)} is defined twice`);
    }
    names.add(tool.function.name);
  });
  return tools;
}

function parseToolCall(value: unknown, path: string, tools: Set<string>, context: LineContext): ToolCall {
  const call = requireObject(value, path, CALL_KEYS, context);
  const id = requireString(call.id, `${path}.id`, context);
  if (id.length === 0) fail(context, `"${path}.id" must not be empty`);
  if (call.type !== "function") fail(context, `"${path}.type" must be "function"`);
  const fn = requireObject(call.function, `${path}.function`, CALL_FUNCTION_KEYS, context);
  const name = requireString(fn.name, `${path}.function.name`, context);
  if (!tools.has(name)) {
    const known =
      tools.size === 0 ? 'the row has no "tools"' : `the row's tools are ${[...tools].join(", ")}`;
    fail(context, `"${path}.function.name" calls an unknown tool ${JSON.stringify(name)} (${known})`);
  }
  const args = requireString(fn.arguments, `${path}.function.arguments`, context);
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch (error) {
    fail(context, `"${path}.function.arguments" is not JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    fail(context, `"${path}.function.arguments" must be the JSON text of an object, got ${describe(parsed)}`);
  }
  return { id, type: "function", function: { name, arguments: args } };
}

export function parseMessage(
  value: unknown,
  path: string,
  tools: Set<string>,
  context: LineContext,
): DatasetMessage {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `"${path}" must be an object with "role" and "content", got ${describe(value)}`);
  }
  const message = requireObject(value, path, MESSAGE_KEYS, context);
  const role = message.role;
  if (typeof role !== "string" || !ROLES.includes(role as ChatRole)) {
    fail(context, `"${path}.role" must be one of ${ROLES.join(", ")}`);
  }
  if (message.tool_calls !== undefined && role !== "assistant") {
    fail(context, `"${path}.tool_calls" is only allowed on assistant messages`);
  }
  if (message.tool_call_id !== undefined && role !== "tool") {
    fail(context, `"${path}.tool_call_id" is only allowed on tool messages`);
  }
  let calls: ToolCall[] | undefined;
  if (message.tool_calls !== undefined) {
    if (!Array.isArray(message.tool_calls) || message.tool_calls.length === 0) {
      fail(context, `"${path}.tool_calls" must be a non-empty array`);
    }
    calls = message.tool_calls.map((c, i) => parseToolCall(c, `${path}.tool_calls[${i}]`, tools, context));
  }
  // An assistant message that only calls tools has no content (null or absent, as OpenAI writes it).
  const content =
    calls !== undefined && (message.content === null || message.content === undefined)
      ? ""
      : requireString(message.content, `${path}.content`, context);
  if (message.name !== undefined && typeof message.name !== "string") {
    fail(context, `"${path}.name" must be a string`);
  }
  const parsed: DatasetMessage = { role: role as ChatRole, content };
  if (calls !== undefined) parsed.tool_calls = calls;
  if (role === "tool") {
    parsed.tool_call_id = requireString(message.tool_call_id, `${path}.tool_call_id`, context);
    if (message.name !== undefined) parsed.name = message.name as string;
  }
  if (message.weight !== undefined) {
    if (message.weight !== 0 && message.weight !== 1) fail(context, `"${path}.weight" must be 0 or 1`);
    if (role !== "assistant") fail(context, `"${path}.weight" is only allowed on assistant messages`);
    parsed.weight = message.weight;
  }
  return parsed;
}

/** Every tool message answers a call an earlier assistant message made, and call ids are unique. */
export function checkToolAnswers(messages: DatasetMessage[], context: LineContext): void {
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    m.tool_calls?.forEach((call, j) => {
      if (calls.has(call.id)) {
        fail(context, `"messages[${i}].tool_calls[${j}].id" ${JSON.stringify(call.id)} is used twice`);
      }
      calls.add(call.id);
    });
    if (m.role === "tool" && !calls.has(m.tool_call_id as string)) {
      fail(
        context,
        `"messages[${i}].tool_call_id" ${JSON.stringify(m.tool_call_id)} answers no tool call made before it`,
      );
    }
  });
}

function parseRow(value: unknown, context: LineContext): DatasetRow {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `expected a JSON object, got ${describe(value)}`);
  }
  const row = value as Record<string, unknown>;
  if ("messages" in row) {
    for (const key of Object.keys(row)) {
      if (!ROW_KEYS.includes(key)) fail(context, `unknown key "${key}" next to "messages"`);
    }
    if (!Array.isArray(row.messages) || row.messages.length === 0) {
      fail(context, `"messages" must be a non-empty array`);
    }
    const tools = row.tools === undefined ? undefined : parseTools(row.tools, context);
    if (row.parallel_tool_calls !== undefined && typeof row.parallel_tool_calls !== "boolean") {
      fail(context, `"parallel_tool_calls" must be true or false`);
    }
    const names = new Set(tools?.map((t) => t.function.name));
    const messages = row.messages.map((m, i) => parseMessage(m, `messages[${i}]`, names, context));
    checkToolAnswers(messages, context);
    if (!messages.some((m) => m.role === "assistant")) {
      fail(context, `"messages" must contain at least one assistant message`);
    }
    if (!messages.some((m) => m.role === "assistant" && m.weight !== 0)) {
      fail(context, `every assistant message has weight 0, so there is nothing to train on`);
    }
    return tools === undefined ? { messages } : { messages, tools };
  }
  if ("prompt" in row || "completion" in row) {
    for (const key of Object.keys(row)) {
      if (key !== "prompt" && key !== "completion") {
        fail(context, `unknown key "${key}" next to "prompt" and "completion"`);
      }
    }
    const prompt = requireString(row.prompt, "prompt", context);
    const completion = requireString(row.completion, "completion", context);
    return { prompt, completion };
  }
  const keys = Object.keys(row);
  fail(
    context,
    `expected "messages", or "prompt" and "completion"` +
      (keys.length === 0 ? "" : `; found ${keys.map((k) => `"${k}"`).join(", ")}`),
  );
}

/** Checks one decoded JSON line and returns the row it holds (preference-dataset.ts has another). */
export type RowParser<R> = (value: unknown, context: LineContext) => R;

function parseLine<R>(text: string, context: LineContext, parse: RowParser<R>): R | null {
  if (text.trim().length === 0) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail(context, `not valid JSON (${(error as Error).message})`);
  }
  return parse(value, context);
}

/** Splits text into lines with LF or CRLF endings, dropping a leading UTF-8 BOM. */
function splitLines(text: string): string[] {
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split("\n");
  return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
}

function emptyError(source: string | undefined, file: string | undefined): EngineError {
  const where = source === undefined ? "the dataset" : source;
  return new EngineError("invalid_dataset", `${where}: the dataset is empty (no JSON lines)`, file);
}

/**
 * Parses JSONL text into rows. Blank lines are skipped; line numbers in errors
 * count every line from 1. `source` names the file in error messages.
 */
export function parseDataset(text: string, options: { source?: string } = {}): DatasetRow[] {
  return parseRows(text, parseRow, options);
}

/** parseDataset with another row rule (the same lines, blank lines and errors). */
export function parseRows<R>(text: string, parse: RowParser<R>, options: { source?: string } = {}): R[] {
  const rows: R[] = [];
  const context: LineContext = { source: options.source, file: options.source, line: 0 };
  for (const line of splitLines(text)) {
    context.line++;
    const row = parseLine(line, context, parse);
    if (row !== null) rows.push(row);
  }
  if (rows.length === 0) throw emptyError(options.source, options.source);
  return rows;
}

/** The line (1-based, counted from `firstLine`) of the first byte sequence in `chunk` that is not UTF-8. */
function lineOfInvalidUtf8(chunk: Uint8Array, firstLine: number): number {
  const text = new TextDecoder("utf-8").decode(chunk);
  const bad = text.indexOf("\uFFFD");
  let line = firstLine;
  for (let i = 0; i < bad; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * Reads and validates a JSONL file, streaming it line by line so a large file is
 * never held as one string. Errors name the file by its base name in the message
 * and carry the full path in `error.file`.
 */
export async function readDataset(path: string): Promise<DatasetRow[]> {
  return readRows(path, parseRow);
}

/** readDataset with another row rule (preference-dataset.ts). */
export async function readRows<R>(path: string, parse: RowParser<R>): Promise<R[]> {
  const source = basename(path);
  const context: LineContext = { source, file: path, line: 0 };
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const rows: R[] = [];
  let pending = ""; // text after the last complete line
  const takeLines = (text: string) => {
    for (const line of text.split("\n")) {
      context.line++;
      const row = parseLine(line.endsWith("\r") ? line.slice(0, -1) : line, context, parse);
      if (row !== null) rows.push(row);
    }
  };
  try {
    for await (const chunk of createReadStream(path)) {
      let decoded: string;
      try {
        decoded = decoder.decode(chunk as Buffer, { stream: true });
      } catch {
        fail(
          { ...context, line: lineOfInvalidUtf8(chunk as Buffer, context.line + 1) },
          "not valid UTF-8 text",
        );
      }
      const end = decoded.lastIndexOf("\n");
      if (end < 0) {
        pending += decoded;
        continue;
      }
      takeLines(pending + decoded.slice(0, end));
      pending = decoded.slice(end + 1);
    }
    pending += decoder.decode();
  } catch (error) {
    if (error instanceof EngineError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new EngineError("missing_file", `${path}: file not found`, path);
    if (code === "EISDIR") throw new EngineError("invalid_dataset", `${path}: is a folder, not a file`, path);
    if (error instanceof TypeError) fail({ ...context, line: context.line + 1 }, "not valid UTF-8 text");
    throw new EngineError("invalid_dataset", `${path}: cannot be read (${(error as Error).message})`, path);
  }
  takeLines(pending);
  if (rows.length === 0) throw emptyError(source, path);
  return rows;
}
