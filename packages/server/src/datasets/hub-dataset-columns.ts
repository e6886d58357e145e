// Which columns of a Hub dataset make a training row, and the row they make.
// The shapes (docs/hub.md#datasets):
//   messages                             → { messages } (OpenAI chat rows)
//   prompt, completion [, system]        → { prompt, completion } (or messages with the system turn);
//                                          lists of messages in both (TRL's conversational form) → the
//                                          conversation, trained on the completion only
//   instruction, output [, input, system] → Alpaca: the user turn is the instruction,
//                                          then a blank line and the input when it is not empty
// The rows they make are checked afterwards by the same rules as a local JSONL
// file (the engine's parseDataset), so a bad message reads the same.
import type { HubColumnMapping } from "@svc/wire";

export type { HubColumnMapping };

export const COLUMN_MAPPING_FIELDS = [
  "messages",
  "prompt",
  "completion",
  "instruction",
  "input",
  "output",
  "system",
] as const;

export type RowShape =
  | { kind: "messages"; messages: string }
  | { kind: "prompt_completion"; prompt: string; completion: string; system?: string }
  | { kind: "alpaca"; instruction: string; output: string; input?: string; system?: string };

/** A problem with the dataset's columns as a whole (not one row). */
export class ColumnShapeError extends Error {}

/** A row that cannot be turned into a training row; `row` is 1-based in the split. */
export class RowShapeError extends Error {
  constructor(
    readonly row: number,
    message: string,
  ) {
    super(message);
  }
}

const quoted = (names: readonly string[]) => names.map((n) => `"${n}"`).join(", ");

/** The columns a shape reads. */
export function shapeColumns(shape: RowShape): string[] {
  const { kind: _, ...columns } = shape;
  return Object.values(columns).filter((c): c is string => typeof c === "string");
}

function fromMapping(mapping: HubColumnMapping, columns: readonly string[]): RowShape {
  for (const key of Object.keys(mapping)) {
    if (!(COLUMN_MAPPING_FIELDS as readonly string[]).includes(key))
      throw new ColumnShapeError(
        `"columns": unknown field "${key}" (allowed: ${COLUMN_MAPPING_FIELDS.join(", ")})`,
      );
  }
  for (const [key, column] of Object.entries(mapping)) {
    if (typeof column !== "string" || column === "")
      throw new ColumnShapeError(`"columns.${key}" must name a column`);
    if (!columns.includes(column))
      throw new ColumnShapeError(
        `"columns.${key}": no column "${column}" (columns found: ${quoted(columns)})`,
      );
  }
  const m = mapping;
  const given = Object.keys(m);
  const only = (allowed: string[]) => given.every((k) => allowed.includes(k));
  if (m.messages !== undefined && only(["messages"])) return { kind: "messages", messages: m.messages };
  if (m.prompt !== undefined && m.completion !== undefined && only(["prompt", "completion", "system"]))
    return { kind: "prompt_completion", prompt: m.prompt, completion: m.completion, system: m.system };
  if (
    m.instruction !== undefined &&
    m.output !== undefined &&
    only(["instruction", "output", "input", "system"])
  )
    return { kind: "alpaca", instruction: m.instruction, output: m.output, input: m.input, system: m.system };
  throw new ColumnShapeError(
    `"columns" must map one shape: { messages }, { prompt, completion, system? } or { instruction, output, input?, system? }; got { ${given.join(", ")} }`,
  );
}

/** The shape the dataset's columns take (or the explicit mapping names), or a ColumnShapeError naming the columns found. */
export function resolveRowShape(columns: readonly string[], mapping?: HubColumnMapping): RowShape {
  if (mapping) return fromMapping(mapping, columns);
  const has = (name: string) => columns.includes(name);
  const system = has("system") ? "system" : undefined;
  const candidates: RowShape[] = [];
  if (has("messages")) candidates.push({ kind: "messages", messages: "messages" });
  if (has("prompt") && has("completion"))
    candidates.push({ kind: "prompt_completion", prompt: "prompt", completion: "completion", system });
  if (has("instruction") && has("output"))
    candidates.push({
      kind: "alpaca",
      instruction: "instruction",
      output: "output",
      input: has("input") ? "input" : undefined,
      system,
    });
  if (candidates.length === 1) {
    const [shape] = candidates;
    // A system column next to a messages column would be dropped silently: the messages carry their own system turn.
    if (shape.kind === "messages" && system)
      throw new ColumnShapeError(
        `columns "messages" and "system" both found; name the one to train on with "columns" (e.g. { "messages": "messages" })`,
      );
    return shape;
  }
  if (candidates.length > 1)
    throw new ColumnShapeError(
      `the columns fit more than one shape (${candidates.map((c) => quoted(shapeColumns(c))).join(" / ")}); name the one to train on with "columns"`,
    );
  throw new ColumnShapeError(
    `no known column shape: expected "messages", "prompt" and "completion", or "instruction", "input" and "output"; ` +
      `columns found: ${columns.length > 0 ? quoted(columns) : "none"}; map yours with "columns" (docs/hub.md#datasets)`,
  );
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/**
 * Parquet's structs have every field in every row, so a message's optional
 * field reads as null where a JSON row would leave it out: nulls are dropped.
 */
function withoutNulls(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  return messages.map((message) => {
    if (typeof message !== "object" || message === null || Array.isArray(message)) return message;
    return Object.fromEntries(Object.entries(message).filter(([, v]) => v !== null && v !== undefined));
  });
}

/** A text column's value, or a RowShapeError naming it; `optional` columns may be null. */
function text(record: Record<string, unknown>, column: string, row: number, optional = false): string | null {
  const value = record[column];
  if (typeof value === "string") return value;
  if (!optional && !(column in record)) throw new RowShapeError(row, `column "${column}" is missing`);
  if (optional && (value === null || value === undefined)) return null;
  throw new RowShapeError(row, `column "${column}" must be a string, got ${describe(value)}`);
}

/**
 * TRL's conversational prompt/completion: both columns are lists of messages.
 * The row is the conversation, with the prompt's assistant turns as context
 * (weight 0), so only the completion is trained on, as TRL trains it.
 */
function conversationalRow(
  record: Record<string, unknown>,
  shape: Extract<RowShape, { kind: "prompt_completion" }>,
): object | null {
  const prompt = record[shape.prompt];
  const completion = record[shape.completion];
  if (!Array.isArray(prompt) || !Array.isArray(completion)) return null;
  const context = (withoutNulls(prompt) as unknown[]).map((m) =>
    typeof m === "object" && m !== null && (m as { role?: unknown }).role === "assistant"
      ? { ...m, weight: 0 }
      : m,
  );
  const system = shape.system ? record[shape.system] : null;
  const head = typeof system === "string" && system !== "" ? [{ role: "system", content: system }] : [];
  return { messages: [...head, ...context, ...(withoutNulls(completion) as unknown[])] };
}

/** The training row (a local JSONL row's object) that record `row` (1-based in the split) makes. */
export function trainingRow(record: Record<string, unknown>, shape: RowShape, row: number): object {
  if (shape.kind === "messages") {
    if (!(shape.messages in record)) throw new RowShapeError(row, `column "${shape.messages}" is missing`);
    return { messages: withoutNulls(record[shape.messages]) };
  }
  let prompt: string;
  let completion: string;
  if (shape.kind === "prompt_completion") {
    const conversational = conversationalRow(record, shape);
    if (conversational) return conversational;
    prompt = text(record, shape.prompt, row) as string;
    completion = text(record, shape.completion, row) as string;
  } else {
    const instruction = text(record, shape.instruction, row) as string;
    const input = shape.input ? text(record, shape.input, row, true) : null;
    prompt = input ? `${instruction}\n\n${input}` : instruction;
    completion = text(record, shape.output, row) as string;
  }
  const system = shape.system ? text(record, shape.system, row, true) : null;
  if (!system) return { prompt, completion };
  return {
    messages: [
      { role: "system", content: system },
      { role: "user", content: prompt },
      { role: "assistant", content: completion },
    ],
  };
}
