// Tool calls in a model's output, in the syntax of its family (tool-syntax.ts):
// the grammar that constrains a generation to the calls tool_choice allows,
// and the parsers that turn the generated text back into OpenAI tool_calls,
// at once (parseToolCalls) or as it streams (ToolCallStream).
//
// The grammars, by tool_choice:
// - "required": one call (one or more, each in the syntax's own separator,
//   when parallel calls are allowed and the syntax has them), from the first token;
// - a named function: one call of it;
// - "auto": free text, and from the syntax's trigger on (`<tool_call>`,
//   Llama's `{"name"`) the calls of "required";
// - "none": no grammar, and the text is not read for calls.
// Each call is the syntax's `{"name": ..., "arguments": ...}` object with the
// arguments matching the tool's `parameters` schema (any JSON object when the
// tool has none).

import { randomBytes } from "node:crypto";
import {
  checkJsonSchema,
  compileSchemaSteps,
  finishInSlices,
  type JsonSchema,
  type OutputGrammar,
  type SchemaBudget,
  SchemaError,
} from "../constrained/index.js";
import type { ToolCall, ToolDefinition } from "../types.js";
import { callText, type ToolSyntax } from "./tool-syntax.js";

/** OpenAI's tool_choice. */
export type ToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

export interface ToolGrammarOptions {
  tools: readonly ToolDefinition[];
  toolChoice?: ToolChoice;
  /** Several calls in one turn (OpenAI's parallel_tool_calls, default true). */
  parallelToolCalls?: boolean;
}

function callGrammar(syntax: ToolSyntax, tool: ToolDefinition): OutputGrammar {
  const head = callText(syntax, tool.function.name, {});
  // callText writes `...": {}}<close>`; the arguments object goes where "{}" is.
  const at = head.lastIndexOf("{}");
  return {
    kind: "sequence",
    items: [
      { kind: "literal", text: head.slice(0, at) },
      { kind: "json", schema: tool.function.parameters ?? null },
      { kind: "literal", text: head.slice(at + 2) },
    ],
  };
}

/** The grammar of a generation offered `tools` under `toolChoice`; null for "none" (or no tools). */
export function toolCallGrammar(syntax: ToolSyntax, options: ToolGrammarOptions): OutputGrammar | null {
  const { tools, toolChoice = "auto", parallelToolCalls = true } = options;
  if (toolChoice === "none" || tools.length === 0) return null;
  if (typeof toolChoice === "object") {
    const tool = tools.find((t) => t.function.name === toolChoice.function.name);
    if (tool === undefined)
      throw new Error(`tool_choice names ${toolChoice.function.name}, which is not a tool`);
    return callGrammar(syntax, tool);
  }
  const one: OutputGrammar =
    tools.length === 1
      ? callGrammar(syntax, tools[0])
      : { kind: "choice", options: tools.map((tool) => callGrammar(syntax, tool)) };
  const calls: OutputGrammar =
    parallelToolCalls && syntax.separator !== null
      ? { kind: "repeat", item: one, separator: { kind: "literal", text: syntax.separator }, min: 1 }
      : one;
  if (toolChoice === "required") return calls;
  // biome-ignore lint/suspicious/noThenProperty: OutputGrammar's lazy grammar names what follows its trigger "then"
  return { kind: "lazy", trigger: syntax.trigger, then: calls };
}

/** The deepest a tool's or response format's schema may nest (objects and arrays), far past real schemas. */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * checkJsonSchema for a schema a dataset row brings: first its nesting,
 * without recursion, so that a schema nested thousands of levels deep is
 * refused with a SchemaError instead of exhausting the stack.
 */
export function checkToolSchema(schema: unknown, budget?: SchemaBudget): void {
  checkSchemaNesting(schema);
  checkJsonSchema(schema, "", budget);
}

/**
 * checkToolSchema for a schema a request brings, compiled in slices of a few
 * milliseconds: a near-limit schema takes tens of milliseconds to check, which
 * the server's other requests would otherwise wait for.
 */
export async function checkToolSchemaInSlices(schema: unknown, budget?: SchemaBudget): Promise<void> {
  checkSchemaNesting(schema);
  await finishInSlices(compileSchemaSteps(schema as JsonSchema, "", budget));
}

function checkSchemaNesting(schema: unknown): void {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: schema, path: "", depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value !== "object" || value === null) continue;
    if (depth > MAX_SCHEMA_DEPTH) {
      const keyword = path.slice(path.lastIndexOf("/") + 1);
      throw new SchemaError(keyword, path, `the schema nests more than ${MAX_SCHEMA_DEPTH} levels deep`);
    }
    for (const [key, child] of Object.entries(value))
      stack.push({ value: child, path: `${path}/${key}`, depth: depth + 1 });
  }
}

/** A new call id in OpenAI's form. */
export function newToolCallId(): string {
  return `call_${randomBytes(12).toString("hex")}`;
}

/** What the model wrote: its text, and the calls it made (empty when none). */
export interface ParsedOutput {
  content: string;
  toolCalls: ToolCall[];
}

const CALL_HEAD = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(arguments|parameters)"\s*:\s*/;

/**
 * Scans one JSON value from the start of `text`: the index just past it, or
 * -1 when `text` ends inside it. The value is an object or array here (the
 * arguments), so its end is where the nesting returns to zero.
 */
function jsonValueEnd(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && !/\s/.test(ch)) return -1;
  }
  return -1;
}

/**
 * Reads the model's output as `syntax` writes calls: text before the first
 * call is the content; each call becomes an OpenAI tool call with a new id.
 * When max_tokens cut the output inside a call, the calls before it are kept
 * and the cut one dropped (none whole: all content); output that holds text
 * that is not a call where one should be is all content.
 */
export function parseToolCalls(syntax: ToolSyntax, text: string): ParsedOutput {
  const stream = new ToolCallStream(syntax);
  const events = [...stream.push(text), ...stream.end()];
  // Output that max_tokens cut inside a call keeps the calls written whole; other broken output is text.
  const keep = stream.complete ? stream.callCount : stream.cutOff ? stream.closedCount : 0;
  if (keep === 0 && !stream.complete) return { content: text, toolCalls: [] };
  let content = "";
  const calls: ToolCall[] = [];
  for (const event of events) {
    if (event.type === "content") content += event.text;
    else if (event.type === "call")
      calls.push({ id: event.id, type: "function", function: { name: event.name, arguments: "" } });
    else calls[event.index].function.arguments += event.text;
  }
  return { content: calls.length > 0 ? content.trim() : content, toolCalls: calls.slice(0, keep) };
}

export type ToolCallEvent =
  | { type: "content"; text: string }
  /** A call starts: its index among the turn's calls, its new id and the function's name. */
  | { type: "call"; index: number; id: string; name: string }
  /** More of call `index`'s arguments (JSON text). */
  | { type: "arguments"; index: number; text: string };

/**
 * Reads streamed output as it comes: content is passed on except a tail that
 * could still be a call's opening; inside a call, the name is announced once
 * it is complete and the arguments are passed on as they are written.
 */
export class ToolCallStream {
  private buffer = "";
  private state: "content" | "head" | "arguments" | "tail" = "content";
  private calls = 0;
  private broken = false;
  /** Calls read to their close. */
  private closed = 0;
  /** The output ended inside a call (max_tokens), rather than holding text that is not a call. */
  private cut = false;
  /** How much of the buffer's arguments text has been passed on. */
  private argumentsSent = 0;

  constructor(private readonly syntax: ToolSyntax) {}

  /** Whether every call the output opened was complete (false: the text was not well-formed calls). */
  get complete(): boolean {
    return !this.broken && (this.state === "content" || this.state === "tail");
  }

  /** The number of calls seen so far. */
  get callCount(): number {
    return this.calls;
  }

  /** The number of calls read to their close. */
  get closedCount(): number {
    return this.closed;
  }

  /** Whether the output ended inside a call. */
  get cutOff(): boolean {
    return this.cut;
  }

  push(text: string): ToolCallEvent[] {
    this.buffer += text;
    const events: ToolCallEvent[] = [];
    while (this.step(events)) {}
    return events;
  }

  /** The end of the output: whatever is left as content. */
  end(): ToolCallEvent[] {
    const events: ToolCallEvent[] = [];
    const inside = this.state === "head" || this.state === "arguments" || this.state === "tail";
    if (!this.broken && inside && (this.state !== "tail" || this.buffer.trim() !== "")) {
      this.broken = true;
      this.cut = true;
    }
    if ((this.state === "content" || this.broken) && this.buffer !== "" && this.calls === 0) {
      events.push({ type: "content", text: this.buffer });
    }
    this.buffer = "";
    return events;
  }

  /** One move of the state machine; false when it needs more text. */
  private step(events: ToolCallEvent[]): boolean {
    if (this.broken) {
      if (this.buffer !== "") events.push({ type: "content", text: this.buffer });
      this.buffer = "";
      return false;
    }
    switch (this.state) {
      case "content":
        return this.content(events);
      case "head":
        return this.head(events);
      case "arguments":
        return this.arguments(events);
      case "tail": {
        // After a call's object: its close, then a separator and the next call, or the end.
        const close = this.syntax.close.trim();
        const text = this.buffer.trimStart();
        if (text.length < close.length) return false;
        if (!text.startsWith(close)) return this.fail();
        this.buffer = text.slice(close.length);
        this.state = "content";
        this.closed++;
        return true;
      }
    }
  }

  private content(events: ToolCallEvent[]): boolean {
    const trigger = this.syntax.trigger;
    const at = this.buffer.indexOf(trigger);
    // Before the first call, text is content; between and after calls only whitespace may come.
    const pass = (text: string) => {
      if (this.calls === 0) {
        if (text !== "") events.push({ type: "content", text });
        return true;
      }
      return text.trim() === "";
    };
    if (at < 0) {
      // Keep back a tail that may be the start of the trigger.
      let keep = Math.min(trigger.length - 1, this.buffer.length);
      while (keep > 0 && !trigger.startsWith(this.buffer.slice(this.buffer.length - keep))) keep--;
      const out = this.buffer.slice(0, this.buffer.length - keep);
      if (!pass(out)) return this.fail();
      this.buffer = this.buffer.slice(out.length);
      return false;
    }
    if (!pass(this.buffer.slice(0, at))) return this.fail();
    // The trigger is the opening (hermes' <tool_call>) or the object's own start (Llama's {"name").
    const opening = this.syntax.open.startsWith(trigger) ? trigger.length : 0;
    this.buffer = this.buffer.slice(at + opening);
    this.state = "head";
    return true;
  }

  private head(events: ToolCallEvent[]): boolean {
    const head = CALL_HEAD.exec(this.buffer);
    if (head === null) return this.buffer.length > MAX_HEAD ? this.fail() : false;
    if (head[2] !== this.syntax.argumentsKey) return this.fail();
    events.push({ type: "call", index: this.calls, id: newToolCallId(), name: JSON.parse(`"${head[1]}"`) });
    this.calls++;
    this.buffer = this.buffer.slice(head[0].length);
    this.state = "arguments";
    this.argumentsSent = 0;
    return true;
  }

  /** Passes on the arguments as they are written, up to the end of their JSON value. */
  private arguments(events: ToolCallEvent[]): boolean {
    if (this.argumentsSent === 0) {
      // The whitespace before the value (the head matched before it arrived) is not the arguments'.
      this.buffer = this.buffer.trimStart();
      if (this.buffer === "") return false;
    }
    const end = jsonValueEnd(this.buffer);
    const upTo = end < 0 ? this.buffer.length : end;
    if (upTo > this.argumentsSent) {
      events.push({
        type: "arguments",
        index: this.calls - 1,
        text: this.buffer.slice(this.argumentsSent, upTo),
      });
      this.argumentsSent = upTo;
    }
    if (end < 0) return false;
    const rest = this.buffer.slice(end).trimStart();
    if (rest === "") return false;
    if (!rest.startsWith("}")) return this.fail();
    this.buffer = rest.slice(1);
    this.state = "tail";
    return true;
  }

  private fail(): boolean {
    this.broken = true;
    return true;
  }
}

/** The longest a call's head (`{"name": "<64 characters>", "arguments": `) can be, with room for whitespace. */
const MAX_HEAD = 200;
