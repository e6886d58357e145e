// What POST /v1/jobs checks for method "grpo" (docs/post-training.md#grpo):
// its graders, each an OpenAI grader object (graders/grader-schema.ts) with a
// weight, checked whole at job creation with the field named; then run once
// against the dataset's first row, so a template naming a field the rows do
// not have ({{item.answer}}) is refused here, before any training, and not at
// the first step. A score_model grader's judge must be a model the job's
// training process can load (job-judges.ts); the training process runs it.
import { createReadStream } from "node:fs";
import {
  hyperparameterRanges,
  type JobGrader,
  type JobReward,
  MAX_JOB_REWARDS,
  REWARD_NAME,
} from "@svc/wire";
import { grade } from "../graders/grade.js";
import { GradeError } from "../graders/grade-errors.js";
import { type Grader, parseGrader } from "../graders/grader-schema.js";
import type { Judge } from "../graders/score-model.js";
import { sampleOf } from "../graders/templates.js";
import { badRequest } from "../http/api-error.js";
import { array, type Check, inRange, object, optional, string } from "../http/validate.js";

/** Most graders one job sums. */
export const MAX_JOB_GRADERS = 16;

/** The request's graders: each checked whole (its JSON kept as given, to be parsed again where it runs). */
export const jobGradersCheck: Check<JobGrader[]> = array(
  object({
    grader: (value, path) => {
      parseGrader(value, path);
      return value as Record<string, unknown>;
    },
    weight: optional(inRange(hyperparameterRanges().graderWeight)),
  }),
  { min: 1, max: MAX_JOB_GRADERS },
);

/**
 * The request's trainer rewards (docs/post-training.md#rewards-in-typescript): names and weights only, as the
 * trainer computes them; a name is never two rewards', nor a grader's (the step logs key means by name).
 */
export const jobRewardsCheck: Check<JobReward[]> = array(
  object({
    name: string({
      pattern: REWARD_NAME,
      patternText: "a letter or _, then letters, digits, _ . - (at most 64)",
    }),
    weight: optional(inRange(hyperparameterRanges().graderWeight)),
  }),
  { min: 1, max: MAX_JOB_REWARDS },
);

/** Refuses a trainer reward named like another reward or one of the job's graders. */
export function checkRewardNames(rewards: readonly JobReward[], graders: readonly JobGrader[] = []): void {
  const taken = new Set(parsedGraders(graders).map(({ grader }) => grader.name));
  rewards.forEach(({ name }, i) => {
    if (taken.has(name))
      throw badRequest(
        `"rewards[${i}].name": "${name}" is named twice (rewards' and graders' names are the step logs' keys)`,
      );
    taken.add(name);
  });
}

/** The graders parsed for grading, in order, with their weights. */
export function parsedGraders(graders: readonly JobGrader[]): { grader: Grader; weight: number }[] {
  return graders.map((g, i) => ({
    grader: parseGrader(g.grader, `graders[${i}].grader`),
    weight: g.weight ?? 1,
  }));
}

/** The first row of a stored JSONL file (uploads were checked whole, so it parses). */
async function firstRow(path: string): Promise<unknown> {
  let head = "";
  for await (const chunk of createReadStream(path, { encoding: "utf8", highWaterMark: 64 * 1024 })) {
    head += chunk as string;
    const row = /\S[^\n]*/.exec(head);
    if (row && row.index + row[0].length < head.length) return JSON.parse(row[0]);
  }
  const row = /\S[^\n]*/.exec(head);
  return row ? JSON.parse(row[0]) : {};
}

/** A judge that asks no model: the lowest score its grader's range allows. */
const checkJudge: Judge = async (grader) => JSON.stringify({ result: (grader.range ?? [0, 1])[0] });

/** Grades an empty completion against the dataset's first row: a grader that cannot be evaluated there is refused. */
export async function checkGradersOnDataset(
  graders: readonly JobGrader[],
  datasetPath: string,
): Promise<void> {
  const item = await firstRow(datasetPath);
  for (const { grader } of parsedGraders(graders)) {
    try {
      // a judge's templates are filled before it is asked; this check's judge answers the range's low end
      await grade(grader, { item, sample: sampleOf("") }, { judge: checkJudge });
    } catch (error) {
      // a formula may be undefined on an empty completion only; a missing item field is missing everywhere
      if (error instanceof GradeError && error.code === "invalid_variable")
        throw badRequest(`${error.message} (checked against the dataset's first row)`, error.code);
      if (!(error instanceof GradeError)) throw error;
    }
  }
}
