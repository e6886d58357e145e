// A model's chat template rendered the way Hugging Face transformers renders it
// (apply_chat_template): the Jinja text from tokenizer_config.json, run by
// @huggingface/jinja with the special-token strings (bos_token, eos_token, ...),
// the messages, add_generation_prompt, and the globals transformers gives every
// template:
//   strftime_now(format)  the current local time through Python's strftime in
//                         the C locale (Llama 3.2, Granite and SmolLM3 write
//                         today's date into their system turn with it);
//   raise_exception(msg)  fails the render with the template's message.
// `tools` is defined only when a request or row gives tools, as transformers
// passes them (OpenAI's {"type": "function", "function": {...}} objects).
// Messages reach the template as transformers' callers give them: an
// assistant message's tool_calls with each call's arguments as an object
// (OpenAI sends JSON text; templates write it with tojson), its content ""
// when it only calls tools (Qwen3's template cannot read a none content), and
// a tool message's tool_call_id and name. A key
// a message does not have is absent, not none: Llama 3.1 tests
// `'tool_calls' in message`.
// Nothing else is defined: a template's optional variables (Llama 3.1's
// date_string, documents, enable_thinking) take the template's own defaults,
// as they do when transformers is called without them.

import { Environment, Interpreter, Template } from "@huggingface/jinja";
import type { ChatMessage, ToolDefinition } from "../types.js";
import { callArguments } from "./tool-syntax.js";

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

function dayOfYear(date: Date): number {
  const start = new Date(date.getFullYear(), 0, 1);
  const today = new Date(date.getFullYear(), date.getMonth(), date.getDate());
  // Local midnights can be 23 or 25 hours apart across a DST change; rounding absorbs it.
  return Math.round((today.getTime() - start.getTime()) / 86_400_000) + 1;
}

/**
 * Python's `time.strftime(format)` in the C locale, which is what transformers'
 * strftime_now gives a template: English day and month names whatever the
 * process's locale. Handles the C89 directives plus %e, %F, %D, %T and glibc's
 * "%-d" (no padding); any other directive is written as it is.
 */
export function strftime(date: Date, format: string): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  const hours = date.getHours();
  return format.replace(/%(-?)([a-zA-Z%])/g, (token, noPad: string, directive: string) => {
    let value: string;
    switch (directive) {
      case "a":
        value = DAYS[date.getDay()].slice(0, 3);
        break;
      case "A":
        value = DAYS[date.getDay()];
        break;
      case "b":
      case "h":
        value = MONTHS[date.getMonth()].slice(0, 3);
        break;
      case "B":
        value = MONTHS[date.getMonth()];
        break;
      case "d":
        value = pad(date.getDate());
        break;
      case "e":
        value = String(date.getDate()).padStart(2, " ");
        break;
      case "m":
        value = pad(date.getMonth() + 1);
        break;
      case "y":
        value = pad(date.getFullYear() % 100);
        break;
      case "Y":
        value = String(date.getFullYear());
        break;
      case "H":
        value = pad(hours);
        break;
      case "I":
        value = pad(hours % 12 === 0 ? 12 : hours % 12);
        break;
      case "p":
        value = hours < 12 ? "AM" : "PM";
        break;
      case "M":
        value = pad(date.getMinutes());
        break;
      case "S":
        value = pad(date.getSeconds());
        break;
      case "j":
        value = pad(dayOfYear(date), 3);
        break;
      case "F":
        value = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
        break;
      case "D":
        value = `${pad(date.getMonth() + 1)}/${pad(date.getDate())}/${pad(date.getFullYear() % 100)}`;
        break;
      case "T":
        value = `${pad(hours)}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
        break;
      case "%":
        return noPad ? token : "%";
      default:
        return token;
    }
    return noPad ? value.replace(/^[0 ]+(?=.)/, "") : value;
  });
}

/** Python's range(stop) and range(start, stop[, step]). */
function range(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error("range() arg 3 must not be zero");
  const values: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) values.push(i);
  return values;
}

/** A message as the template sees it (see the header). */
function templateMessage(m: ChatMessage): Record<string, unknown> {
  const calls = m.tool_calls !== undefined && m.tool_calls.length > 0 ? m.tool_calls : undefined;
  const value: Record<string, unknown> = { role: m.role, content: m.content };
  if (calls) {
    value.tool_calls = calls.map((c) => ({
      id: c.id,
      type: c.type,
      function: { name: c.function.name, arguments: callArguments(c) },
    }));
  }
  if (m.tool_call_id !== undefined) value.tool_call_id = m.tool_call_id;
  if (m.name !== undefined) value.name = m.name;
  return value;
}

/** A parsed chat template and the values every render of it gets. */
export class ChatTemplate {
  private readonly template: Template;

  /**
   * Throws the parser's error when `source` is not valid Jinja.
   * `now` is the clock strftime_now reads (tests pin it).
   */
  constructor(
    source: string,
    private readonly specialTokens: Readonly<Record<string, string>>,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.template = new Template(source);
  }

  /** The template's text for `messages`; throws what the template raises. */
  render(
    messages: readonly ChatMessage[],
    addGenerationPrompt: boolean,
    tools?: readonly ToolDefinition[],
  ): string {
    // Template.render would declare @huggingface/jinja's own globals, whose
    // strftime_now names months in the process's locale and knows few
    // directives, and refuses a second declaration: the environment is built
    // here with the same globals, transformers' strftime_now among them.
    const env = new Environment();
    const values: Record<string, unknown> = {
      true: true,
      false: false,
      none: null,
      True: true,
      False: false,
      None: null,
      range,
      raise_exception: (message: unknown) => {
        throw new Error(String(message));
      },
      strftime_now: (format: unknown) => strftime(this.now(), String(format)),
      ...this.specialTokens,
      messages: messages.map(templateMessage),
      add_generation_prompt: addGenerationPrompt,
    };
    if (tools !== undefined) values.tools = tools;
    for (const [name, value] of Object.entries(values)) env.set(name, value);
    return new Interpreter(env).run(this.template.parsed).value as string;
  }
}
