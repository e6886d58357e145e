// score_model: an LLM judge, as OpenAI's grader JSON defines it. `input` is
// the judge's prompt (messages whose content is a template), `model` a base
// model this server serves or an `ft:` model of the caller's org, `range` the
// score's bounds (default [0, 1]), `sampling_params` its sampling. The judge
// answers under svc's constrained decoding with the JSON object
// {"result": <number>} (OpenAI's judges answer a structured "result" too), so
// its answer always parses; the prompt should say what the score means.
// A score outside `range` fails the sample: the judge did not grade it.
import type { ChatMessage, OutputGrammar } from "@svc/engine";
import { SEED_RANGE } from "@svc/wire";
import { badRequest, quoteInput } from "../http/api-error.js";
import {
  array,
  type Check,
  describe,
  inRange,
  number,
  object,
  oneOf,
  optional,
  string,
} from "../http/validate.js";
import { GradeError } from "./grade-errors.js";
import { parseTemplate, render, type Template, type TemplateContext } from "./templates.js";

export interface ScoreModelMessage {
  role: "system" | "user" | "assistant" | "developer";
  content: Template;
  /** The content as sent (a string or one text part), written back by graderJson. */
  sent: unknown;
  type?: "message";
}

export interface ScoreModelGrader {
  type: "score_model";
  name: string;
  model: string;
  input: ScoreModelMessage[];
  range?: [number, number];
  sampling_params?: {
    temperature?: number;
    top_p?: number;
    seed?: number;
    max_completions_tokens?: number;
  };
  pass_threshold?: number;
}

/** What a grade asks of a judge: its model's answer to the prompt (text). */
export type Judge = (grader: ScoreModelGrader, messages: ChatMessage[]) => Promise<string>;

/** The judge's answer, enforced by grammar. */
export const JUDGE_GRAMMAR: OutputGrammar = {
  kind: "json",
  schema: {
    type: "object",
    properties: { result: { type: "number" } },
    required: ["result"],
    additionalProperties: false,
  },
};

/** Most tokens a judge may answer with (its answer is one small JSON object). */
const MAX_JUDGE_TOKENS = 256;
const MAX_PROMPT_MESSAGES = 32;
const MAX_TEMPLATE = 20_000;

const refuse = (path: string, what: string): never => {
  throw badRequest(`${quoteInput(path)} ${what}`, "invalid_grader");
};

const content: Check<{ template: Template; sent: unknown }> = (value, path) => {
  if (typeof value === "string")
    return { template: parseTemplate(string({ max: MAX_TEMPLATE })(value, path), path), sent: value };
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const part = object({
      type: oneOf(["input_text", "output_text"] as const),
      text: string({ max: MAX_TEMPLATE }),
    })(value, path);
    return { template: parseTemplate(part.text, `${path}.text`), sent: value };
  }
  return refuse(
    path,
    `must be a string or one { type: "input_text", text } part (got ${describe(value)}): svc's judges read text only`,
  );
};

const message = (value: unknown, path: string): ScoreModelMessage => {
  const m = object({
    role: oneOf(["system", "user", "assistant", "developer"] as const),
    content,
    type: optional(oneOf(["message"] as const)),
  })(value, path);
  return {
    role: m.role,
    content: m.content.template,
    sent: m.content.sent,
    ...(m.type ? { type: m.type } : {}),
  };
};

const range: Check<[number, number]> = (value, path) => {
  const [low, high] = array(number(), { min: 2, max: 2 })(value, path);
  if (!(low < high)) refuse(path, `must be [low, high] with low below high (got [${low}, ${high}])`);
  return [low, high];
};

export const scoreModelCheck: Check<ScoreModelGrader> = object({
  type: oneOf(["score_model"] as const),
  name: string({ min: 1, max: 200 }),
  model: string({ min: 1, max: 300 }),
  input: array(message, { min: 1, max: MAX_PROMPT_MESSAGES }),
  range: optional(range),
  sampling_params: optional(
    object({
      temperature: optional(number({ min: 0, max: 2 })),
      top_p: optional(number({ exclusiveMin: 0, max: 1 })),
      seed: optional(inRange(SEED_RANGE)),
      max_completions_tokens: optional(number({ integer: true, min: 1, max: MAX_JUDGE_TOKENS })),
      reasoning_effort: optional((_v: unknown, p: string): never =>
        refuse(p, "svc's models are not reasoning models; leave reasoning_effort out"),
      ),
    }),
  ),
  pass_threshold: optional(number()),
}) as Check<ScoreModelGrader>;

/** The grader as OpenAI's JSON writes it. */
export function scoreModelJson(grader: ScoreModelGrader): Record<string, unknown> {
  return {
    ...grader,
    input: grader.input.map((m) => ({ role: m.role, content: m.sent, ...(m.type ? { type: m.type } : {}) })),
  };
}

/** The judge's score for the sample: its prompt filled, its answer read and checked against `range`. */
export async function judgeScore(grader: ScoreModelGrader, ctx: TemplateContext, judge: Judge, path: string) {
  const messages: ChatMessage[] = grader.input.map((m) => ({
    role: m.role === "developer" ? "system" : m.role,
    content: render(m.content, ctx),
  }));
  const text = await judge(grader, messages);
  let score: unknown;
  try {
    score = (JSON.parse(text) as { result?: unknown }).result;
  } catch {}
  const [low, high] = grader.range ?? [0, 1];
  if (typeof score !== "number" || !Number.isFinite(score))
    throw new GradeError(
      "invalid_reward",
      `${path}.model`,
      `${quoteInput(path)}: the judge answered ${quoteInput(text)}, not {"result": <number>}`,
    );
  if (score < low || score > high)
    throw new GradeError(
      "invalid_reward",
      `${path}.range`,
      `${quoteInput(path)}: the judge scored ${score}, outside "range" [${low}, ${high}]; the sample is not graded`,
    );
  return score;
}
