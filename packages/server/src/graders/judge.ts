// A score_model grader's judge, run through the inference service as chat
// completions are: a base model this server serves, or an ft: model (or one
// of its checkpoints) that the caller may see. judgeFor resolves every judge
// of a grader at once, so an unknown model is refused when the grader is
// validated (400 naming grader…model), before any sample; the judge then
// answers each prompt under JUDGE_GRAMMAR. Routes that take a grader (the
// graders API, a reinforcement job) call it with their request.
import type { ChatMessage } from "@svc/engine";
import type { AdapterRef } from "@svc/wire";
import type { Context } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { ApiError, badRequest } from "../http/api-error.js";
import type { ResolvedTarget } from "../inference/inference-service.js";
import { fineTunedModelOr404 } from "../routes/openai/models.js";
import type { Grader } from "./grader-schema.js";
import { JUDGE_GRAMMAR, type Judge, type ScoreModelGrader } from "./score-model.js";

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
export async function judgeFor(ctx: ServerContext, c: Context<ApiEnv>, grader: Grader): Promise<Judge> {
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
