// OpenAI's graders API: POST /v1/fine_tuning/alpha/graders/validate checks a
// grader and answers it back ({ grader }); POST …/run grades one model
// sample against one dataset item, answering OpenAI's GraderRunResponse
// (reward, metadata with the error flags and scores, sub_rewards). The
// grader is svc's (packages/server/src/graders, docs/graders.md). A sample
// that cannot be graded (its item lacks a field a template names, a formula
// gives no finite number) is refused with 400 naming the field, never
// answered with a made-up 0. A score_model grader's judge runs through the
// inference service as chat completions do: a base model this server serves,
// or an ft: model of the caller's org (resolved, and refused naming
// grader…model, when the grader is validated).
import type { ChatMessage } from "@svc/engine";
import { type Context, Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { grade } from "../../graders/grade.js";
import { GradeError } from "../../graders/grade-errors.js";
import { type Grader, graderJson, parseGrader, type ScoreModelGrader } from "../../graders/grader-schema.js";
import { JUDGE_GRAMMAR, type Judge } from "../../graders/score-model.js";
import { sampleOf } from "../../graders/templates.js";
import { ApiError, badRequest } from "../../http/api-error.js";
import { readJson } from "../../http/body.js";
import { OpenAiError } from "../../http/openai-error.js";
import { object, optional, parseBody, string } from "../../http/validate.js";
import type { ResolvedTarget } from "../../inference/inference-service.js";
import type { AdapterRef } from "../../wire.js";
import { fineTunedModelOr404 } from "./models.js";

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

/** Each score_model grader of the grader with the field it sits at. */
function judgesOf(grader: Grader, path = "grader"): [ScoreModelGrader, string][] {
  if (grader.type === "score_model") return [[grader, path]];
  if (grader.type !== "multi") return [];
  return Object.entries(grader.graders).flatMap(([key, sub]) => judgesOf(sub, `${path}.graders.${key}`));
}

/** The judge's model as the inference service runs it; an unknown model is the grader's field's fault. */
async function judgeTarget(ctx: ServerContext, c: Context<ApiEnv>, model: string, field: string) {
  try {
    if (!model.startsWith("ft:")) return ctx.inference.baseModel(model, field);
    const { job, step } = await fineTunedModelOr404(ctx, c, model);
    const ref: AdapterRef =
      step === null ? { kind: "final", jobId: job.id } : { kind: "checkpoint", jobId: job.id, step };
    return await ctx.inference.adapter(job, ref, field);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404)
      throw badRequest(`"${field}": ${error.message}`, "invalid_grader");
    throw error;
  }
}

/** Resolves every judge's model now (validation); the judge then asks it, answering under JUDGE_GRAMMAR. */
async function judgeFor(ctx: ServerContext, c: Context<ApiEnv>, grader: Grader): Promise<Judge> {
  const targets = new Map<ScoreModelGrader, ResolvedTarget>();
  for (const [judge, path] of judgesOf(grader))
    targets.set(judge, await judgeTarget(ctx, c, judge.model, `${path}.model`));
  return async (judge: ScoreModelGrader, messages: ChatMessage[]) => {
    const target = targets.get(judge);
    if (!target) throw new Error("graders: a judge that was not resolved");
    const prepared = await ctx.inference.prepare(target);
    const sampling = judge.sampling_params ?? {};
    const result = await prepared.complete({
      messages,
      temperature: sampling.temperature ?? 0,
      ...(sampling.top_p !== undefined ? { topP: sampling.top_p } : {}),
      ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
      maxTokens: sampling.max_completions_tokens ?? 64,
      grammar: JUDGE_GRAMMAR,
    });
    return result.text;
  };
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
