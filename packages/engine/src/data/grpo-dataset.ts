// GRPO data as JSONL: one prompt per line, `messages` (the SFT message rules of
// dataset.ts) ending with a user, system or tool message, since the completion
// is sampled, not given; optional `tools` and `response_format`; and any other
// fields, which the rewards and graders read ({{item.answer}}). Every line is
// checked before anything is returned; the first bad one fails with its line
// and field named, as parseDataset does.

import type { GrpoRow } from "../training/grpo-step.js";
import type { ToolDefinition } from "../types.js";
import {
  checkToolAnswers,
  describe,
  fail,
  type LineContext,
  parseMessage,
  parseRows,
  parseTools,
  readRows,
} from "./dataset.js";

const FORMATS = ["text", "json_object", "json_schema"];

function parseResponseFormat(value: unknown, context: LineContext): GrpoRow["response_format"] {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(context, `"response_format" must be an object, got ${describe(value)}`);
  const format = value as Record<string, unknown>;
  if (!FORMATS.includes(format.type as string))
    fail(
      context,
      `"response_format.type" must be one of ${FORMATS.join(", ")}, got ${describe(format.type)}`,
    );
  if (format.type === "json_schema") {
    const spec = format.json_schema as Record<string, unknown> | undefined;
    if (typeof spec !== "object" || spec === null || typeof spec.schema !== "object" || spec.schema === null)
      fail(context, `"response_format.json_schema.schema" must be a JSON Schema object`);
  }
  return format as GrpoRow["response_format"];
}

/** Checks one decoded line as a GRPO prompt row; its other fields are kept as they are. */
export function parsePromptRow(value: unknown, context: LineContext): GrpoRow {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(context, `expected a JSON object, got ${describe(value)}`);
  const row = value as Record<string, unknown>;
  if (!Array.isArray(row.messages) || row.messages.length === 0)
    fail(context, `"messages" must be a non-empty array of messages, got ${describe(row.messages)}`);
  let tools: ToolDefinition[] | undefined;
  if (row.tools !== undefined) tools = parseTools(row.tools, context);
  const names = new Set(tools?.map((t) => t.function.name));
  const messages = row.messages.map((m, i) => parseMessage(m, `messages[${i}]`, names, context));
  messages.forEach((m, i) => {
    if (m.weight !== undefined) fail(context, `"messages[${i}].weight" is not allowed in a GRPO prompt`);
  });
  if (messages.at(-1)?.role === "assistant")
    fail(
      context,
      `"messages" must end with a user, system or tool message: the completion is sampled after it`,
    );
  checkToolAnswers(messages, context);
  const out: GrpoRow = { ...row, messages };
  if (tools !== undefined) out.tools = tools;
  if (row.response_format !== undefined)
    out.response_format = parseResponseFormat(row.response_format, context);
  return out;
}

/**
 * Whether a decoded row is meant as a GRPO prompt: its messages end with a
 * message that is not the assistant's (an SFT row ends with the answer it
 * trains), so an upload tells the formats apart from its first row.
 */
export function isPromptRow(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const messages = (value as { messages?: unknown }).messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  const last = messages.at(-1) as { role?: unknown } | null;
  return typeof last === "object" && last !== null && last.role !== "assistant";
}

/** Parses GRPO prompt JSONL text. */
export function parsePromptDataset(text: string, options: { source?: string } = {}): GrpoRow[] {
  return parseRows(text, parsePromptRow, options);
}

/** Reads and checks a GRPO prompt JSONL file, streaming it as readDataset does. */
export function readPromptDataset(path: string): Promise<GrpoRow[]> {
  return readRows(path, parsePromptRow);
}
