// Grading one sample with a checked grader (grader-schema.ts): the reward and
// what OpenAI's run response reports beside it (each sub-grader's score, the
// error flags). A GradeError escapes: the sample is not graded at all.
import { schemaMismatch } from "@svc/engine";
import { evaluateFormula } from "./formula.js";
import { SampleParseError } from "./grade-errors.js";
import type { Grader, LeafGrader } from "./grader-schema.js";
import { render, type TemplateContext } from "./templates.js";
import { similarity } from "./text-similarity.js";

export interface Grade {
  reward: number;
  /** A multi grader's sub-graders' rewards by key; {} for a single grader. */
  subRewards: Record<string, number>;
  /** The completion was not what a template read (not JSON, a key missing): graded 0. */
  sampleParseError: string | null;
}

function leafReward(grader: LeafGrader, ctx: TemplateContext): number {
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
function leafGrade(grader: LeafGrader, ctx: TemplateContext): { reward: number; parseError: string | null } {
  try {
    return { reward: leafReward(grader, ctx), parseError: null };
  } catch (error) {
    if (error instanceof SampleParseError) return { reward: 0, parseError: error.message };
    throw error;
  }
}

/** The sample's grade; throws GradeError when it cannot be graded (docs/graders.md). */
export function grade(grader: Grader, ctx: TemplateContext): Grade {
  if (grader.type !== "multi") {
    const { reward, parseError } = leafGrade(grader, ctx);
    return { reward, subRewards: {}, sampleParseError: parseError };
  }
  const subRewards: Record<string, number> = {};
  let sampleParseError: string | null = null;
  for (const [key, sub] of Object.entries(grader.graders)) {
    const { reward, parseError } = leafGrade(sub, ctx);
    subRewards[key] = reward;
    sampleParseError ??= parseError;
  }
  return { reward: evaluateFormula(grader.calculate_output, subRewards), subRewards, sampleParseError };
}
