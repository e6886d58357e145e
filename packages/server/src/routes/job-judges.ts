// The judges of a GRPO job's score_model graders (docs/graders.md#score_model):
// the job's training process runs them (worker/training-judge.ts), so a judge's
// model must be one a worker can load from disk:
// - a base model this server serves from a folder (--model), or
// - an ft: model, or one checkpoint of it, of a job in the job's own project.
// jobJudgesCheck refuses any other model when the job is made (400
// invalid_grader naming graders[i].grader…model); judgeModels finds the
// folders again when the job runs, as a start adapter's are.
import type { AdapterRef, JobGrader, Project } from "@svc/wire";
import type { ServerContext } from "../context.js";
import type { Grader } from "../graders/grader-schema.js";
import type { ScoreModelGrader } from "../graders/score-model.js";
import { badRequest } from "../http/api-error.js";
import type { ModelRegistry } from "../models/model-registry.js";
import type { Store } from "../store/store.js";
import type { JudgeModel } from "../worker/training-protocol.js";
import { parsedGraders } from "./job-grpo.js";
import { startAdapterDir } from "./job-start-adapter.js";
import { parseFineTunedModel } from "./openai/openai-ids.js";

/** Each score_model grader of the grader with the field it sits at. */
export function judgesOf(grader: Grader, path: string): [ScoreModelGrader, string][] {
  if (grader.type === "score_model") return [[grader, path]];
  if (grader.type !== "multi") return [];
  return Object.entries(grader.graders).flatMap(([key, sub]) => judgesOf(sub, `${path}.graders.${key}`));
}

/** Every judge of the job's graders, with its field. */
const jobJudges = (graders: readonly JobGrader[]) =>
  parsedGraders(graders).flatMap(({ grader }, i) => judgesOf(grader, `graders[${i}].grader`));

/** The adapter an ft: judge names (its folder relative to the data dir) when it is a job of `projectId` (null: any); else why not. */
async function ftJudge(
  store: Store,
  model: string,
  projectId: string | null,
): Promise<{ baseModel: string; ref: AdapterRef; dir: string } | string> {
  const parsed = parseFineTunedModel(model);
  const job = parsed ? await store.jobs.get(parsed.jobId) : undefined;
  if (!parsed || !job || (projectId !== null && job.project_id !== projectId))
    return "is no fine-tuned model of this project";
  if (!parsed.prefix.startsWith(`ft:${job.base_model}:`)) return `does not name job ${job.id}'s base model`;
  const ref: AdapterRef =
    parsed.step === null
      ? { kind: "final", jobId: job.id }
      : { kind: "checkpoint", jobId: job.id, step: parsed.step };
  const dir = await startAdapterDir({ store }, ref);
  if (!dir)
    return parsed.step === null
      ? `names job ${job.id}, which has no final adapter (it has not succeeded)`
      : `names checkpoint step ${parsed.step} of job ${job.id}, which has no such checkpoint`;
  return { baseModel: job.base_model, ref, dir };
}

/** Refuses a judge whose model a GRPO job's training cannot load, naming the grader's field. */
export async function checkJobJudges(
  ctx: Pick<ServerContext, "store" | "models">,
  project: Project,
  graders: readonly JobGrader[],
): Promise<void> {
  for (const [judge, path] of jobJudges(graders)) {
    const field = `"${path}.model"`;
    if (judge.model.startsWith("ft:")) {
      const found = await ftJudge(ctx.store, judge.model, project.id);
      if (typeof found === "string") throw badRequest(`${field}: ${judge.model} ${found}`, "invalid_grader");
      if (!ctx.models.isRegistered(found.baseModel))
        throw badRequest(
          `${field}: ${judge.model} is an adapter of ${found.baseModel}, which this server does not serve from a folder; a GRPO job's judge must run on a served base model`,
          "invalid_grader",
        );
    } else if (!ctx.models.isRegistered(judge.model))
      throw badRequest(
        `${field}: ${judge.model} is not a base model this server serves from a folder (svc server --model); a GRPO job's judge is a served base model or an ft: model of this project`,
        "invalid_grader",
      );
  }
}

/** The folders the training process loads each judge from (the job runner's half); a string says why not. */
export async function judgeModels(
  store: Store,
  models: ModelRegistry,
  abs: (dataDirPath: string) => string,
  graders: readonly JobGrader[],
): Promise<JudgeModel[] | string> {
  const out: JudgeModel[] = [];
  for (const [judge, path] of jobJudges(graders)) {
    if (out.some((j) => j.model === judge.model)) continue;
    let baseModel = judge.model;
    let adapterDir: string | null = null;
    if (judge.model.startsWith("ft:")) {
      const found = await ftJudge(store, judge.model, null);
      if (typeof found === "string") return `the judge of ${path}: ${judge.model} ${found}`;
      baseModel = found.baseModel;
      adapterDir = abs(found.dir);
    }
    const registered = models.isRegistered(baseModel) ? models.get(baseModel) : undefined;
    if (!registered) return `the judge of ${path} runs on ${baseModel}, which this worker does not serve`;
    out.push({ model: judge.model, modelDir: registered.dir, adapterDir });
  }
  return out;
}
