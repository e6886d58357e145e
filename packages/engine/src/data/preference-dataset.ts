// Preference data (DPO) as JSONL, one pair per line, in either form people have:
//   OpenAI's  {"input": {"messages": [...], "tools"?: [...]},
//              "preferred_output": [assistant message], "non_preferred_output": [assistant message]}
//   TRL's     {"prompt": [messages], "chosen": [messages], "rejected": [messages]}
//             (TRL's "standard" form with strings is taken too: a string prompt is
//             one user turn, a string answer one assistant turn).
// The prompt's messages follow the SFT rules (dataset.ts: roles, tools, tool
// calls and their answers); each answer is one or more assistant messages. An
// assistant turn inside the prompt is context, never trained. Every line is
// checked before anything is returned; the first bad one fails with its line
// and field named, as parseDataset does.

import type { DatasetRow, ToolDefinition } from "../types.js";
import {
  checkToolAnswers,
  type DatasetMessage,
  describe,
  fail,
  type LineContext,
  parseMessage,
  parseRows,
  parseTools,
  readRows,
} from "./dataset.js";

/** One preference pair, normalized: the prompt and the preferred and dispreferred answers. */
export interface PreferenceRow {
  prompt: DatasetMessage[];
  tools?: ToolDefinition[];
  chosen: DatasetMessage[];
  rejected: DatasetMessage[];
}

const OPENAI_KEYS = ["input", "preferred_output", "non_preferred_output"];
const OPENAI_INPUT_KEYS = ["messages", "tools", "parallel_tool_calls"];
const TRL_KEYS = ["prompt", "chosen", "rejected"];

function messagesOf(
  value: unknown,
  path: string,
  defaultRole: "user" | "assistant",
  tools: Set<string>,
  context: LineContext,
): DatasetMessage[] {
  if (typeof value === "string") return [{ role: defaultRole, content: value }];
  if (!Array.isArray(value) || value.length === 0) {
    fail(context, `"${path}" must be a non-empty array of messages, got ${describe(value)}`);
  }
  return value.map((m, i) => parseMessage(m, `${path}[${i}]`, tools, context));
}

function answerOf(value: unknown, path: string, tools: Set<string>, context: LineContext): DatasetMessage[] {
  const messages = messagesOf(value, path, "assistant", tools, context);
  messages.forEach((m, i) => {
    if (m.role !== "assistant") fail(context, `"${path}[${i}].role" must be "assistant", got "${m.role}"`);
    if (m.weight !== undefined) fail(context, `"${path}[${i}].weight" is not allowed in a preference answer`);
  });
  return messages;
}

function checkKeys(
  row: Record<string, unknown>,
  allowed: string[],
  form: string,
  context: LineContext,
): void {
  for (const key of Object.keys(row)) {
    if (!allowed.includes(key)) fail(context, `unknown key "${key}" in ${form}`);
  }
}

/** Checks one decoded line as a preference pair (either form). */
export function parsePreferenceRow(value: unknown, context: LineContext): PreferenceRow {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(context, `expected a JSON object, got ${describe(value)}`);
  }
  const row = value as Record<string, unknown>;
  let promptValue: unknown;
  let chosenValue: unknown;
  let rejectedValue: unknown;
  let tools: ToolDefinition[] | undefined;
  let paths: [string, string, string];
  if ("input" in row || "preferred_output" in row || "non_preferred_output" in row) {
    checkKeys(row, OPENAI_KEYS, 'a row with "input", "preferred_output" and "non_preferred_output"', context);
    for (const key of OPENAI_KEYS) if (row[key] === undefined) fail(context, `"${key}" is missing`);
    const input = row.input;
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      fail(context, `"input" must be an object with "messages", got ${describe(input)}`);
    }
    const fields = input as Record<string, unknown>;
    checkKeys(fields, OPENAI_INPUT_KEYS, '"input"', context);
    if (fields.messages === undefined) fail(context, `"input.messages" is missing`);
    if (typeof fields.messages === "string") fail(context, `"input.messages" must be an array of messages`);
    if (fields.tools !== undefined) tools = parseTools(fields.tools, context);
    promptValue = fields.messages;
    chosenValue = row.preferred_output;
    rejectedValue = row.non_preferred_output;
    paths = ["input.messages", "preferred_output", "non_preferred_output"];
  } else if ("prompt" in row || "chosen" in row || "rejected" in row) {
    checkKeys(row, TRL_KEYS, 'a row with "prompt", "chosen" and "rejected"', context);
    for (const key of TRL_KEYS) if (row[key] === undefined) fail(context, `"${key}" is missing`);
    promptValue = row.prompt;
    chosenValue = row.chosen;
    rejectedValue = row.rejected;
    paths = ["prompt", "chosen", "rejected"];
  } else {
    const keys = Object.keys(row);
    fail(
      context,
      `expected a preference pair: "input", "preferred_output" and "non_preferred_output" (OpenAI), ` +
        `or "prompt", "chosen" and "rejected" (TRL)` +
        (keys.length === 0 ? "" : `; found ${keys.map((k) => `"${k}"`).join(", ")}`),
    );
  }
  const names = new Set(tools?.map((t) => t.function.name));
  const prompt = messagesOf(promptValue, paths[0], "user", names, context);
  if (prompt.at(-1)?.role === "assistant") {
    fail(context, `"${paths[0]}" must end with a user, system or tool message: the answers follow it`);
  }
  const chosen = answerOf(chosenValue, paths[1], names, context);
  const rejected = answerOf(rejectedValue, paths[2], names, context);
  checkToolAnswers([...prompt, ...chosen], context);
  checkToolAnswers([...prompt, ...rejected], context);
  return tools === undefined ? { prompt, chosen, rejected } : { prompt, tools, chosen, rejected };
}

/**
 * Whether a decoded row is meant as a preference pair (it has a key of either
 * form, which no SFT row has): how an upload and a job tell the formats apart
 * from a file's first row before checking every row under that format's rules.
 */
export function isPreferenceRow(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return [...OPENAI_KEYS, "chosen", "rejected"].some((key) => key in value);
}

/** Parses preference JSONL text (parseDataset's lines and errors, the pair rules above). */
export function parsePreferenceDataset(text: string, options: { source?: string } = {}): PreferenceRow[] {
  return parseRows(text, parsePreferenceRow, options);
}

/** Reads and checks a preference JSONL file, streaming it as readDataset does. */
export function readPreferenceDataset(path: string): Promise<PreferenceRow[]> {
  return readRows(path, parsePreferenceRow);
}

/**
 * The conversation one answer of a pair stands for, as an SFT row: the prompt
 * with its assistant turns at weight 0 (context, not trained), then the answer.
 * Tokenizing and truncating it (truncation.ts, keep_answers) trains exactly the
 * answer's tokens and cuts only the prompt.
 */
export function answerRow(row: PreferenceRow, answer: "chosen" | "rejected"): DatasetRow {
  const prompt = row.prompt.map((m) => (m.role === "assistant" ? { ...m, weight: 0 as const } : m));
  const messages = [...prompt, ...row[answer]];
  return row.tools === undefined ? { messages } : { messages, tools: row.tools };
}
