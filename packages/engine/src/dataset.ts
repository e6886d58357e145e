// Training data as JSONL: one JSON object per non-empty line, either
//   {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}
// (OpenAI's chat fine-tuning format) or
//   {"prompt": "...", "completion": "..."}.
// The whole file is validated before anything is returned: the first bad line
// throws an EngineError("invalid_dataset") naming the file and line, so training
// never starts on a partly-read file. docs/datasets.md lists the rules.

import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { EngineError } from "./errors.js";
import type { ChatMessage, ChatRole, DatasetRow } from "./types.js";

const ROLES: readonly ChatRole[] = ["system", "user", "assistant", "tool"];
const MESSAGE_KEYS = new Set(["role", "content", "name", "weight"]);

/**
 * A parsed message. `weight: 0` (OpenAI's per-message switch, assistant
 * messages only) keeps the message as context but excludes it from the loss.
 */
export interface DatasetMessage extends ChatMessage {
  weight?: 0 | 1;
}

interface LineContext {
  source: string | undefined;
  file: string | undefined;
  line: number;
}

function fail(context: LineContext, problem: string): never {
  const where =
    context.source === undefined ? `line ${context.line}` : `${context.source} line ${context.line}`;
  throw new EngineError("invalid_dataset", `${where}: ${problem}`, context.file, context.line);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

function requireString(value: unknown, path: string, context: LineContext): string {
  if (value === undefined) fail(context, `"${path}" is missing`);
  if (typeof value !== "string") fail(context, `"${path}" must be a string, got ${describe(value)}`);
  return value;
}

function parseMessage(value: unknown, path: string, context: LineContext): DatasetMessage {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `"${path}" must be an object with "role" and "content", got ${describe(value)}`);
  }
  const message = value as Record<string, unknown>;
  for (const key of Object.keys(message)) {
    if (!MESSAGE_KEYS.has(key)) {
      fail(context, `"${path}" has an unknown key "${key}" (allowed: role, content, name, weight)`);
    }
  }
  const role = message.role;
  if (typeof role !== "string" || !ROLES.includes(role as ChatRole)) {
    fail(context, `"${path}.role" must be one of ${ROLES.join(", ")}`);
  }
  const content = requireString(message.content, `${path}.content`, context);
  if (message.name !== undefined && typeof message.name !== "string") {
    fail(context, `"${path}.name" must be a string`);
  }
  const parsed: DatasetMessage = { role: role as ChatRole, content };
  if (message.weight !== undefined) {
    if (message.weight !== 0 && message.weight !== 1) fail(context, `"${path}.weight" must be 0 or 1`);
    if (role !== "assistant") fail(context, `"${path}.weight" is only allowed on assistant messages`);
    parsed.weight = message.weight;
  }
  return parsed;
}

function parseRow(value: unknown, context: LineContext): DatasetRow {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `expected a JSON object, got ${describe(value)}`);
  }
  const row = value as Record<string, unknown>;
  if ("messages" in row) {
    for (const key of Object.keys(row)) {
      if (key !== "messages") fail(context, `unknown key "${key}" next to "messages"`);
    }
    if (!Array.isArray(row.messages) || row.messages.length === 0) {
      fail(context, `"messages" must be a non-empty array`);
    }
    const messages = row.messages.map((m, i) => parseMessage(m, `messages[${i}]`, context));
    if (!messages.some((m) => m.role === "assistant")) {
      fail(context, `"messages" must contain at least one assistant message`);
    }
    if (!messages.some((m) => m.role === "assistant" && m.weight !== 0)) {
      fail(context, `every assistant message has weight 0, so there is nothing to train on`);
    }
    return { messages };
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

function parseLine(text: string, context: LineContext): DatasetRow | null {
  if (text.trim().length === 0) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail(context, `not valid JSON (${(error as Error).message})`);
  }
  return parseRow(value, context);
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
  const rows: DatasetRow[] = [];
  const context: LineContext = { source: options.source, file: options.source, line: 0 };
  for (const line of splitLines(text)) {
    context.line++;
    const row = parseLine(line, context);
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
  const source = basename(path);
  const context: LineContext = { source, file: path, line: 0 };
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const rows: DatasetRow[] = [];
  let pending = ""; // text after the last complete line
  const takeLines = (text: string) => {
    for (const line of text.split("\n")) {
      context.line++;
      const row = parseLine(line.endsWith("\r") ? line.slice(0, -1) : line, context);
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
