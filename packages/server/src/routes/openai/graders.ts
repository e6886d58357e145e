// OpenAI's graders API: POST /v1/fine_tuning/alpha/graders/validate checks a
// grader and answers it back ({ grader }); POST …/run grades one model
// sample against one dataset item, answering OpenAI's GraderRunResponse
// (reward, metadata with the error flags and scores, sub_rewards). The
// grader is svc's (packages/server/src/graders, docs/graders.md). A sample
// that cannot be graded (its item lacks a field a template names, a formula
// gives no finite number) is refused with 400 naming the field, never
// answered with a made-up 0. A score_model grader's judge is resolved
// (graders/judge.ts) before anything is graded.
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { grade } from "../../graders/grade.js";
import { GradeError } from "../../graders/grade-errors.js";
import { type Grader, graderJson, parseGrader } from "../../graders/grader-schema.js";
import { judgeFor } from "../../graders/judge.js";
import { sampleOf } from "../../graders/templates.js";
import { readJson } from "../../http/body.js";
import { OpenAiError } from "../../http/openai-error.js";
import { object, optional, parseBody, string } from "../../http/validate.js";

/** Longest model sample a run grades (characters). */
const MAX_SAMPLE = 1_000_000;

const anyJson = optional((value: unknown) => value);

const ERROR_FLAGS = [
  "formula_parse_error",
  "invalid_variable_error",
  "model_grader_parse_error",
  "model_grader_refusal_error",
  "model_grader_server_error",
  "other_error",
  "python_grader_runtime_error",
  "python_grader_server_error",
  "sample_parse_error",
  "truncated_observation_error",
  "unresponsive_reward_error",
] as const;

function errorFlags(sampleParseError: boolean) {
  const flags: Record<string, boolean | string | null> = Object.fromEntries(
    ERROR_FLAGS.map((f) => [f, false]),
  );
  flags.sample_parse_error = sampleParseError;
  flags.model_grader_server_error_details = null;
  flags.python_grader_runtime_error_details = null;
  flags.python_grader_server_error_type = null;
  return flags;
}

export function graderRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/fine_tuning/alpha/graders/validate", async (c) => {
    const body = parseBody(object({ grader: (v, p) => parseGrader(v, p) }), await readJson(c));
    await judgeFor(ctx, c, body.grader);
    return c.json({ grader: graderJson(body.grader) });
  });
  app.post("/v1/fine_tuning/alpha/graders/run", async (c) => {
    const body = parseBody(
      object({
        grader: (v, p): Grader => parseGrader(v, p),
        model_sample: string({ max: MAX_SAMPLE, allowNul: true }),
        item: anyJson,
      }),
      await readJson(c),
    );
    const judge = await judgeFor(ctx, c, body.grader);
    const started = performance.now();
    let result: Awaited<ReturnType<typeof grade>>;
    try {
      result = await grade(
        body.grader,
        { item: body.item ?? {}, sample: sampleOf(body.model_sample) },
        { judge },
      );
    } catch (error) {
      if (error instanceof GradeError) throw new OpenAiError(400, error.code, error.message, error.param);
      throw error;
    }
    const { grader } = body;
    return c.json({
      reward: result.reward,
      metadata: {
        name: grader.name,
        type: grader.type,
        errors: errorFlags(result.sampleParseError !== null),
        ...(result.sampleParseError ? { sample_parse_error_details: result.sampleParseError } : {}),
        execution_time: (performance.now() - started) / 1000,
        scores: grader.type === "multi" ? result.subRewards : { [grader.name]: result.reward },
        token_usage: null,
        sampled_model_name: null,
      },
      sub_rewards: result.subRewards,
      model_grader_token_usage_per_model: {},
    });
  });
  return app;
}
