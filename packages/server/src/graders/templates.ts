// Grader templates as OpenAI documents them: every `{{ namespace.variable }}`
// in a string is replaced by that variable's value. The namespaces are `item`
// (the dataset row, any field, nested with `.key` and `[index]`) and `sample`
// (the completion: output_text, output_json when the completion is JSON,
// output_tools, choices). A template is parsed when the grader is validated,
// so a malformed placeholder, another namespace or an unknown sample variable
// is refused then, naming the field. When a sample is graded:
//  - a path the item lacks fails the sample (GradeError "invalid_variable"):
//    the grader and the data disagree, and no score would mean anything;
//  - a path into sample.output_json that the completion does not have (it is
//    not JSON, or lacks the key) is the completion's own failure: the grade is
//    0 with errors.sample_parse_error set, as OpenAI scores it (docs/graders.md).
// Strings are inserted as they are; other values as their JSON text.
import { badRequest, quoteInput } from "../http/api-error.js";
import { GradeError, SampleParseError } from "./grade-errors.js";

/** One step of a variable's path: an object key or an array index. */
export type PathStep = string | number;

export interface Placeholder {
  namespace: "item" | "sample";
  steps: PathStep[];
  /** As written between the braces, trimmed ("item.answer"). */
  text: string;
}

export interface Template {
  source: string;
  /** Literal text and placeholders in order. */
  parts: (string | Placeholder)[];
  /** Where the template sits in the grader ("grader.reference"), for errors. */
  path: string;
}

/** The sample namespace's variables (OpenAI's; output_audio is not: svc's models make no audio). */
export const SAMPLE_VARIABLES = ["output_text", "output_json", "output_tools", "choices"] as const;

const PLACEHOLDER = /\{\{(.*?)\}\}/gs;
const STEP = /^(?:\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\])/;

const refuse = (path: string, what: string): never => {
  throw badRequest(`${quoteInput(path)} ${what}`, "invalid_grader");
};

function parsePlaceholder(text: string, path: string): Placeholder {
  const head = /^(item|sample)(?=[.[]|$)/.exec(text);
  if (!head)
    return refuse(
      path,
      `has {{${text}}}: a placeholder is {{ item.<field> }} or {{ sample.<variable> }} (the only namespaces)`,
    );
  const namespace = head[1] as "item" | "sample";
  const steps: PathStep[] = [];
  let rest = text.slice(head[0].length);
  while (rest.length > 0) {
    const m = STEP.exec(rest);
    if (!m)
      return refuse(path, `has {{${text}}}: cannot read ${JSON.stringify(rest)} (use .key, [0] or ["key"])`);
    steps.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : JSON.parse(`"${m[3]}"`)));
    rest = rest.slice(m[0].length);
  }
  if (namespace === "item" && steps.length === 0)
    return refuse(path, `has {{${text}}}: name a field of the item ({{ item.answer }})`);
  if (namespace === "sample" && !(SAMPLE_VARIABLES as readonly PathStep[]).includes(steps[0]))
    return refuse(path, `has {{${text}}}: the sample's variables are ${SAMPLE_VARIABLES.join(", ")}`);
  return { namespace, steps, text };
}

/** A template string, its placeholders checked; `path` names the field for errors. */
export function parseTemplate(source: string, path: string): Template {
  const parts: (string | Placeholder)[] = [];
  let last = 0;
  for (const m of source.matchAll(PLACEHOLDER)) {
    if (m.index > last) parts.push(source.slice(last, m.index));
    parts.push(parsePlaceholder(m[1].trim(), path));
    last = m.index + m[0].length;
  }
  if (last < source.length) parts.push(source.slice(last));
  return { source, parts, path };
}

/** What a completion offers the sample namespace. */
export interface Sample {
  output_text: string;
  /** Absent when the completion is not JSON. */
  output_json?: unknown;
  output_tools?: unknown[];
  choices?: unknown[];
}

/**
 * A completion text as the sample namespace sees it: output_json is its JSON value when it parses,
 * choices one Chat Completions choice holding it, output_tools its tool calls ([] unless given).
 */
export function sampleOf(text: string, extra: Partial<Sample> = {}): Sample {
  const choices = [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text } }];
  const sample: Sample = { output_text: text, output_tools: [], choices, ...extra };
  try {
    sample.output_json = JSON.parse(text);
  } catch {}
  return sample;
}

export interface TemplateContext {
  item: unknown;
  sample: Sample;
}

const stepText = (step: PathStep) => (typeof step === "number" ? `[${step}]` : `.${step}`);

function lookUp(
  root: unknown,
  steps: PathStep[],
): { found: true; value: unknown } | { found: false; at: number } {
  let value = root;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    const ok =
      typeof step === "number"
        ? Array.isArray(value) && step < value.length
        : typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, step);
    if (!ok) return { found: false, at: i };
    value = (value as Record<string | number, unknown>)[step];
  }
  return value === undefined ? { found: false, at: steps.length - 1 } : { found: true, value };
}

function resolve(p: Placeholder, ctx: TemplateContext, template: Template): unknown {
  const root = p.namespace === "item" ? ctx.item : ctx.sample;
  const hit = lookUp(root, p.steps);
  if (hit.found) return hit.value;
  const missing = `${p.namespace}${p.steps
    .slice(0, hit.at + 1)
    .map(stepText)
    .join("")}`;
  if (p.namespace === "sample" && p.steps[0] === "output_json")
    throw new SampleParseError(
      ctx.sample.output_json === undefined
        ? `${template.path}: {{${p.text}}} needs the completion as JSON, and it is not JSON`
        : `${template.path}: {{${p.text}}}: the completion's JSON has no ${missing}`,
    );
  throw new GradeError(
    "invalid_variable",
    p.namespace === "item" ? "item" : template.path,
    `${quoteInput(template.path)}: {{${p.text}}} names ${missing}, which the ${p.namespace} does not have`,
  );
}

/** The template with every placeholder filled; throws GradeError / SampleParseError as above. */
export function render(template: Template, ctx: TemplateContext): string {
  let out = "";
  for (const part of template.parts) {
    if (typeof part === "string") out += part;
    else {
      const value = resolve(part, ctx, template);
      out += typeof value === "string" ? value : JSON.stringify(value);
    }
  }
  return out;
}
