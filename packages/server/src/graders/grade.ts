// Grading one sample with a checked grader (grader-schema.ts): the reward and
// what OpenAI's run response reports beside it (each sub-grader's score, the
// error flags). A GradeError escapes: the sample is not graded at all. A
// score_model grader asks its judge (score-model.ts), which the caller gives.
import { schemaMismatch } from "@svc/engine";
import { evaluateFormula } from "./formula.js";
import { SampleParseError } from "./grade-errors.js";
import type { Grader, LeafGrader } from "./grader-schema.js";
import { type Judge, judgeScore } from "./score-model.js";
import { render, type TemplateContext } from "./templates.js";
import { similarity } from "./text-similarity.js";

export interface Grade {
  reward: number;
  /** A multi grader's sub-graders' rewards by key; {} for a single grader. */
  subRewards: Record<string, number>;
  /** The completion was not what a template read (not JSON, a key missing): graded 0. */
  sampleParseError: string | null;
}

/** Who runs a score_model grader's judge (absent: no judge, a score_model grader is refused). */
export interface GradeOptions {
  judge?: Judge;
}

async function leafReward(grader: LeafGrader, ctx: TemplateContext, path: string, options: GradeOptions) {
  if (grader.type === "score_model") {
    if (!options.judge) throw new Error("grade: a score_model grader needs a judge");
    return judgeScore(grader, ctx, options.judge, path);
  }
  const input = render(grader.input, ctx);
  switch (grader.type) {
    case "string_check": {
      const reference = render(grader.reference, ctx);
      switch (grader.operation) {
        case "eq":
          return input === reference ? 1 : 0;
        case "ne":
          return input !== reference ? 1 : 0;
        case "like":
          return input.includes(reference) ? 1 : 0;
        case "ilike":
          return input.toLowerCase().includes(reference.toLowerCase()) ? 1 : 0;
      }
      break;
    }
    case "text_similarity":
      return similarity(grader.evaluation_metric, input, render(grader.reference, ctx));
    case "json_schema": {
      let value: unknown;
      try {
        value = JSON.parse(input);
      } catch {
        return 0;
      }
      return schemaMismatch(grader.schema, value) === null ? 1 : 0;
    }
  }
}

/** A leaf's reward, 0 with the reason when the completion is not what its templates read. */
async function leafGrade(
  grader: LeafGrader,
  ctx: TemplateContext,
  path: string,
  options: GradeOptions,
): Promise<{ reward: number; parseError: string | null }> {
  try {
    return { reward: await leafReward(grader, ctx, path, options), parseError: null };
  } catch (error) {
    if (error instanceof SampleParseError) return { reward: 0, parseError: error.message };
    throw error;
  }
}

/** The sample's grade; throws GradeError when it cannot be graded (docs/graders.md). */
export async function grade(
  grader: Grader,
  ctx: TemplateContext,
  options: GradeOptions = {},
  path = "grader",
): Promise<Grade> {
  if (grader.type !== "multi") {
    const { reward, parseError } = await leafGrade(grader, ctx, path, options);
    return { reward, subRewards: {}, sampleParseError: parseError };
  }
  const subRewards: Record<string, number> = {};
  let sampleParseError: string | null = null;
  for (const [key, sub] of Object.entries(grader.graders)) {
    const { reward, parseError } = await leafGrade(sub, ctx, `${path}.graders.${key}`, options);
    subRewards[key] = reward;
    sampleParseError ??= parseError;
  }
  return { reward: evaluateFormula(grader.calculate_output, subRewards), subRewards, sampleParseError };
}
