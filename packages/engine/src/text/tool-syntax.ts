// How a model family writes tool calls, as data: what opens and closes a call,
// the JSON object inside ({"name", "arguments"} or Llama's {"name",
// "parameters"}), what separates parallel calls, and the text that starts a
// call in the model's output (the trigger of tool-calls.ts's lazy grammar).
// The same description parses the model's output into OpenAI tool_calls and
// builds the grammar that constrains it (tool-calls.ts).
//
// A tokenizer finds its model's syntax by rendering one probe tool call
// through its chat template and looking for each known syntax in the text:
// - "hermes": `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
//   one block per call (Qwen2.5, Qwen3, Hermes);
// - "llama3": the turn is the bare object `{"name": ..., "parameters": {...}}`,
//   one call per turn (Llama 3.1, 3.2, 3.3).
// A template that writes no tool calls at all (the bundled pico-llama's, Gemma
// 3's, Phi-3.5's; Granite 3.3's and Phi-4-mini's list the tools but drop the
// calls) gets svc's default: the hermes syntax, written by
// defaultToolMessages into the messages' content before the template runs, and
// the functions listed in the system message. A template that writes calls
// its own other way (Mistral's [TOOL_CALLS]) renders them as it does for
// training; serving tools for it is refused, since svc cannot parse its calls.

import type { ChatMessage, ToolCall, ToolDefinition } from "./chat-messages.js";

export interface ToolSyntax {
  name: "hermes" | "llama3";
  /** Written before each call's JSON object. */
  open: string;
  /** Written after each call's JSON object. */
  close: string;
  /** Between two calls of one turn; null when the syntax has one call per turn. */
  separator: string | null;
  /** The key of the arguments object beside "name". */
  argumentsKey: "arguments" | "parameters";
  /** The text that starts a call in the model's output. */
  trigger: string;
  /** "template": the model's chat template writes the syntax; "svc": svc's default for a template without one. */
  writtenBy: "template" | "svc";
}

const HERMES: Omit<ToolSyntax, "writtenBy"> = {
  name: "hermes",
  open: "<tool_call>\n",
  close: "\n</tool_call>",
  separator: "\n",
  argumentsKey: "arguments",
  trigger: "<tool_call>",
};

const LLAMA3: Omit<ToolSyntax, "writtenBy"> = {
  name: "llama3",
  open: "",
  close: "",
  separator: null,
  argumentsKey: "parameters",
  trigger: '{"name"',
};

/** svc's syntax for a template that writes no tool calls. */
export const DEFAULT_TOOL_SYNTAX: ToolSyntax = { ...HERMES, writtenBy: "svc" };

/**
 * JSON as Python's json.dumps writes it by default (and so Jinja's tojson in
 * transformers): ", " and ": " separators, non-ASCII kept as it is.
 */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The arguments of a call as an object for a template (OpenAI sends them as JSON text). */
export function callArguments(call: ToolCall): unknown {
  try {
    return JSON.parse(call.function.arguments);
  } catch {
    return call.function.arguments;
  }
}

/** One call as `syntax` writes it. */
export function callText(syntax: Omit<ToolSyntax, "writtenBy">, name: string, args: unknown): string {
  return `${syntax.open}{"name": ${JSON.stringify(name)}, "${syntax.argumentsKey}": ${pythonJson(args)}}${syntax.close}`;
}

const PROBE_NAME = "svc_probe_function";
const PROBE_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: PROBE_NAME,
    description: "probe",
    parameters: { type: "object", properties: { x: { type: "integer", description: "x" } }, required: ["x"] },
  },
};
const PROBE_MESSAGES: ChatMessage[] = [
  { role: "user", content: "probe" },
  {
    role: "assistant",
    content: "",
    // Nine letters and digits: Mistral's templates refuse other ids.
    tool_calls: [
      { id: "probe0001", type: "function", function: { name: PROBE_NAME, arguments: '{"x": 1}' } },
    ],
  },
];

/**
 * The syntax a chat template writes tool calls in: `render` renders messages
 * with tools through the template alone. "none" when the template writes no
 * call (or cannot render one: @huggingface/jinja lacks a filter SmolLM3's
 * needs), null when it writes one in a syntax svc does not know.
 */
export function detectToolSyntax(
  render: (messages: ChatMessage[], tools: ToolDefinition[]) => string,
): ToolSyntax | "none" | null {
  let text: string;
  let withoutCall: string;
  try {
    text = render(PROBE_MESSAGES, [PROBE_TOOL]);
    withoutCall = render([PROBE_MESSAGES[0], { role: "assistant", content: "" }], [PROBE_TOOL]);
  } catch {
    return "none";
  }
  // A template that lists the tools but drops the calls (Granite 3.3's, Phi-4-mini's) writes no call either.
  if (text === withoutCall) return "none";
  for (const syntax of [HERMES, LLAMA3]) {
    if (text.includes(callText(syntax, PROBE_NAME, { x: 1 }))) return { ...syntax, writtenBy: "template" };
  }
  return null;
}

function toolsText(tools: readonly ToolDefinition[]): string {
  const list = tools.map((tool) => pythonJson(tool)).join("\n");
  // Short: the bundled model's context is 512 tokens.
  return (
    `You can call these functions:\n<tools>\n${list}\n</tools>\n` +
    'To call one, answer with <tool_call>\n{"name": <name>, "arguments": <JSON object>}\n</tool_call>'
  );
}

/**
 * Whether a template writes a "tool" message's content as it writes other
 * turns (a ChatML template writes any role); Gemma's refuses the role.
 */
export function rendersToolRole(render: (messages: ChatMessage[]) => string): boolean {
  const result = "svc-probe-tool-result";
  try {
    return render([
      { role: "user", content: "probe" },
      { role: "assistant", content: "probe" },
      { role: "tool", tool_call_id: "probe0001", content: result },
    ]).includes(result);
  } catch {
    return false;
  }
}

/**
 * The messages of a conversation with tools as plain messages for a template
 * that has no tool syntax: the functions follow the system message's text (in
 * a system message of their own when there is none); an assistant's calls are
 * written after its content in the hermes syntax. Tool messages stay as they
 * are for a template that writes the "tool" role (`toolRole`); for one that
 * does not, each run of them becomes one user message of `<tool_response>` blocks.
 */
export function defaultToolMessages(
  messages: readonly ChatMessage[],
  tools: readonly ToolDefinition[] | undefined,
  toolRole: boolean,
) {
  const out: ChatMessage[] = [];
  if (tools !== undefined && tools.length > 0) {
    const text = toolsText(tools);
    if (messages[0]?.role === "system")
      out.push({ role: "system", content: `${messages[0].content}\n\n${text}` });
    else out.push({ role: "system", content: text });
  }
  messages.forEach((m, i) => {
    if (i === 0 && m.role === "system" && out.length > 0) return;
    if (m.role === "assistant" && m.tool_calls !== undefined && m.tool_calls.length > 0) {
      const calls = m.tool_calls.map((c) => callText(DEFAULT_TOOL_SYNTAX, c.function.name, callArguments(c)));
      const content = [...(m.content === "" ? [] : [m.content]), ...calls].join("\n");
      out.push({ role: "assistant", content });
    } else if (m.role === "tool" && !toolRole) {
      const block = `<tool_response>\n${m.content}\n</tool_response>`;
      const previous = out.at(-1);
      if (previous !== undefined && messages[i - 1]?.role === "tool") previous.content += `\n${block}`;
      else out.push({ role: "user", content: block });
    } else {
      out.push(m);
    }
  });
  return out;
}
