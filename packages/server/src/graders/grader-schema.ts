// A grader object in OpenAI's grader JSON (the `grader` of
// /v1/fine_tuning/alpha/graders/run and …/validate, and of a reinforcement
// job's method), parsed once into a typed, checked form. Everything a grader
// evaluates is checked here, before any sample: unknown types, keys and
// fields, templates naming a namespace or sample variable that does not
// exist, formulas that do not parse or name no sub-grader, schemas outside
// what svc's constrained decoding supports. Each refusal is a 400 naming the
// field ("grader.graders.name.reference"). What svc does not evaluate
// (python, label_model, the cosine and meteor metrics) is
// refused by name, never accepted and then scored 0 (docs/graders.md).
import { checkJsonSchema, type JsonSchema, SchemaError } from "@svc/engine";
import { ApiError, badRequest, quoteInput } from "../http/api-error.js";
import { type Check, describe, number, object, oneOf, optional, string } from "../http/validate.js";
import { type Formula, parseFormula } from "./formula.js";
import { type ScoreModelGrader, scoreModelCheck, scoreModelJson } from "./score-model.js";
import { parseTemplate, type Template } from "./templates.js";
import { SIMILARITY_METRICS, type SimilarityMetric, UNSERVED_METRICS } from "./text-similarity.js";

export const STRING_CHECK_OPERATIONS = ["eq", "ne", "like", "ilike"] as const;
export type StringCheckOperation = (typeof STRING_CHECK_OPERATIONS)[number];

export interface StringCheckGrader {
  type: "string_check";
  name: string;
  operation: StringCheckOperation;
  input: Template;
  reference: Template;
}

export interface TextSimilarityGrader {
  type: "text_similarity";
  name: string;
  evaluation_metric: SimilarityMetric;
  input: Template;
  reference: Template;
  pass_threshold?: number;
}

/** svc's own grader: 1 when the input is JSON that the schema accepts, else 0. */
export interface JsonSchemaGrader {
  type: "json_schema";
  name: string;
  input: Template;
  schema: JsonSchema;
}

export type LeafGrader = StringCheckGrader | TextSimilarityGrader | JsonSchemaGrader | ScoreModelGrader;

export interface MultiGrader {
  type: "multi";
  name: string;
  graders: Record<string, LeafGrader>;
  calculate_output: Formula;
}

export type Grader = LeafGrader | MultiGrader;
export type { ScoreModelGrader };

/** Longest template, name and formula a grader may hold. */
const MAX_TEMPLATE = 20_000;
const MAX_NAME = 200;
const MAX_FORMULA = 2_000;
/** Most sub-graders in one multi grader. */
export const MAX_SUB_GRADERS = 32;

/** The `input` json_schema graders read when they name none. */
const SAMPLE_TEXT = "{{sample.output_text}}";

const refuse = (path: string, what: string): never => {
  throw badRequest(`${quoteInput(path)} ${what}`, "invalid_grader");
};

const name = string({ min: 1, max: MAX_NAME });
const template: Check<Template> = (value, path) =>
  parseTemplate(string({ max: MAX_TEMPLATE })(value, path), path);

/** Why each grader type svc knows of but does not evaluate is refused. */
const UNSERVED_TYPES: Record<string, string> = {
  python:
    "svc does not run Python graders: user code never runs inside the shared server; write the reward as a TypeScript function in the trainer (docs/graders.md)",
  label_model:
    "label_model is not served; use score_model, string_check, text_similarity, json_schema or multi",
  endpoint: "svc does not call out to grader endpoints",
};

const stringCheck = object({
  type: oneOf(["string_check"] as const),
  name,
  operation: oneOf(STRING_CHECK_OPERATIONS),
  input: template,
  reference: template,
});

const metric: Check<SimilarityMetric> = (value, path) => {
  if (typeof value === "string" && Object.hasOwn(UNSERVED_METRICS, value))
    refuse(path, `${JSON.stringify(value)} is not served: ${UNSERVED_METRICS[value]}`);
  return oneOf(SIMILARITY_METRICS)(value, path);
};

const textSimilarity = object({
  type: oneOf(["text_similarity"] as const),
  name,
  evaluation_metric: metric,
  input: template,
  reference: template,
  pass_threshold: optional(number({ min: 0, max: 1 })),
});

const schemaCheck: Check<JsonSchema> = (value, path) => {
  if (typeof value !== "boolean" && (typeof value !== "object" || value === null || Array.isArray(value)))
    refuse(path, `must be a JSON schema object (got ${describe(value)})`);
  try {
    checkJsonSchema(value);
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    refuse(`${path}${error.path.replaceAll("/", ".")}`, `is refused: ${error.message}`);
  }
  return value as JsonSchema;
};

const jsonSchema: Check<JsonSchemaGrader> = (value, path) => {
  const parsed = object({
    type: oneOf(["json_schema"] as const),
    name,
    input: optional(template),
    schema: schemaCheck,
  })(value, path);
  return { ...parsed, input: parsed.input ?? parseTemplate(SAMPLE_TEXT, `${path}.input`) };
};

const LEAVES: Record<string, Check<LeafGrader>> = {
  string_check: stringCheck,
  text_similarity: textSimilarity,
  json_schema: jsonSchema,
  score_model: scoreModelCheck,
};

/** The grader type a value names, refused when it names none svc evaluates. */
function typeOf(value: unknown, path: string, allowed: readonly string[]): string {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return refuse(path, `must be a grader object (got ${describe(value)})`);
  const type = (value as { type?: unknown }).type;
  if (type === undefined) return refuse(`${path}.type`, "is required");
  if (typeof type === "string" && Object.hasOwn(UNSERVED_TYPES, type))
    return refuse(`${path}.type`, `${JSON.stringify(type)} is not served: ${UNSERVED_TYPES[type]}`);
  if (typeof type !== "string" || !allowed.includes(type))
    return refuse(`${path}.type`, `must be one of ${allowed.map((t) => JSON.stringify(t)).join(", ")}`);
  return type;
}

/** A formula variable: what calculate_output calls a sub-grader by. */
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

function multi(value: unknown, path: string): MultiGrader {
  const raw = object({
    type: oneOf(["multi"] as const),
    name,
    graders: (v: unknown, p: string) => {
      if (typeof v !== "object" || v === null || Array.isArray(v))
        return refuse(p, `must be an object of named graders (got ${describe(v)})`);
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length === 0) refuse(p, "must name at least one grader");
      if (entries.length > MAX_SUB_GRADERS) refuse(p, `must name at most ${MAX_SUB_GRADERS} graders`);
      const out: Record<string, LeafGrader> = {};
      for (const [key, sub] of entries) {
        const at = `${p}.${key}`;
        // "__proto__" would set the prototype of the map, not name a grader
        if (!KEY.test(key) || key === "__proto__")
          refuse(at, "is not a usable name: a sub-grader's key is a formula variable (letters, digits, _)");
        const type = typeOf(sub, at, Object.keys(LEAVES));
        out[key] = LEAVES[type](sub, at);
      }
      return out;
    },
    calculate_output: string({ min: 1, max: MAX_FORMULA }),
  })(value, path);
  const calculate_output = parseFormula(
    raw.calculate_output,
    new Set(Object.keys(raw.graders)),
    `${path}.calculate_output`,
  );
  return { ...raw, calculate_output };
}

/** A grader object, checked whole; `path` is where it sits in the request ("grader"). */
export function parseGrader(value: unknown, path = "grader"): Grader {
  try {
    const type = typeOf(value, path, [...Object.keys(LEAVES), "multi"]);
    return type === "multi" ? multi(value, path) : LEAVES[type](value, path);
  } catch (error) {
    // the shared checks' refusals (an unknown field, a wrong type) are the grader's too
    if (error instanceof ApiError && error.status === 400 && error.code !== "invalid_grader")
      throw new ApiError(400, "invalid_grader", error.message);
    throw error;
  }
}

/** The grader as OpenAI's JSON writes it (templates and formulas as their source text). */
export function graderJson(grader: Grader): Record<string, unknown> {
  if (grader.type === "multi") {
    const graders = Object.fromEntries(Object.entries(grader.graders).map(([k, g]) => [k, graderJson(g)]));
    return { type: "multi", name: grader.name, graders, calculate_output: grader.calculate_output.source };
  }
  if (grader.type === "score_model") return scoreModelJson(grader);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(grader))
    out[key] = typeof value === "object" && value !== null && "source" in value ? value.source : value;
  return out;
}
