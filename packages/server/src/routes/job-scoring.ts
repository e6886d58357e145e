// The routes a GRPO job's trainer scores it through (docs/post-training.md#rewards-in-typescript):
// POST /v1/jobs/:id/scoring/claim long-polls for the job's next batch of
// completions (200 with it, 204 when none came within ?wait= seconds), and
// POST /v1/jobs/:id/scoring/:batchId answers one with the trainer's rewards or
// its error. The reward functions run in the trainer's process, never here:
// these routes only pass their numbers on, checked (shape, counts, finite).
// Same access as the job's other routes: another project's job is 404.
import {
  type JobReward,
  SCORER_GONE_REASON,
  SCORING_CLAIM_WAIT_S,
  type ScoringAnswer,
  type ScoringClaimResponse,
} from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, conflict, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { array, type Check, describe, integerQuery, object, optional, string } from "../http/validate.js";
import { UUID_PATTERN } from "../ids.js";
import type { JobRow } from "../store/job-store.js";
import { ScoringStore, scorerTimeoutMs, toScoringBatch } from "../store/scoring-store.js";
import { jobOr404 } from "./access.js";
import { resumeJob } from "./job-pause.js";

const POLL_MS = 250;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const finished = (job: JobRow) =>
  job.status === "completed" || job.status === "failed" || job.status === "cancelled";

/** The job's trainer rewards (hyperparameters.rewards), or 409 when it has none to score. */
function trainerRewards(job: JobRow): JobReward[] {
  const rewards = (JSON.parse(job.hyperparameters) as { rewards?: JobReward[] }).rewards ?? [];
  if (rewards.length === 0)
    throw conflict(`job ${job.id} has no trainer rewards: nothing to score`, "no_trainer_rewards");
  return rewards;
}

const finiteNumber: Check<number> = (value, path) => {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  throw badRequest(`"${path}" must be a finite number (got ${describe(value)})`, "invalid_rewards");
};

const answerBody = object({
  rewards: optional(array(array(finiteNumber))),
  error: optional(string({ min: 1, max: 4000 })),
});

/** The answer, checked against its batch: one list per completion, one number per reward. */
function checkedAnswer(raw: unknown, items: number, names: string[]): ScoringAnswer {
  const body = answerBody(raw, "");
  if ((body.rewards === undefined) === (body.error === undefined))
    throw badRequest('the body must hold exactly one of "rewards" and "error"', "invalid_rewards");
  if (body.error !== undefined) return { error: body.error };
  const rewards = body.rewards!;
  if (rewards.length !== items)
    throw badRequest(
      `"rewards" has ${rewards.length} score lists for the batch's ${items} completions`,
      "invalid_rewards",
    );
  rewards.forEach((list, i) => {
    if (list.length !== names.length)
      throw badRequest(
        `"rewards[${i}]" has ${list.length} numbers; expected ${names.length} (${names.join(", ")})`,
        "invalid_rewards",
      );
  });
  return { rewards };
}

export function jobScoringRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/jobs/:id/scoring/claim", async (c) => {
    const waitS = integerQuery(
      c.req.query("wait"),
      "wait",
      { min: 0, max: SCORING_CLAIM_WAIT_S, integer: true },
      SCORING_CLAIM_WAIT_S,
    );
    let job = await jobOr404(ctx, c, c.req.param("id"));
    trainerRewards(job);
    const scoring = new ScoringStore(ctx.store.db);
    const deadline = Date.now() + waitS * 1000;
    for (;;) {
      if (finished(job)) throw conflict(`job ${job.id} has finished (${job.status})`, "job_finished");
      await scoring.seen(job.id);
      // The scorer is back: a job paused because it was gone goes on.
      if (job.status === "paused" && job.paused_reason === SCORER_GONE_REASON) await resumeJob(ctx, job);
      const batch = await scoring.claim(job.id, scorerTimeoutMs());
      if (batch) return c.json({ batch: toScoringBatch(batch) } satisfies ScoringClaimResponse);
      if (Date.now() >= deadline || c.req.raw.signal.aborted) return c.body(null, 204);
      await sleep(POLL_MS);
      job = (await ctx.store.jobs.get(job.id)) ?? job;
    }
  });
  app.post("/v1/jobs/:id/scoring/:batchId", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    trainerRewards(job);
    const batchId = c.req.param("batchId");
    const scoring = new ScoringStore(ctx.store.db);
    const batch = UUID_PATTERN.test(batchId) ? await scoring.get(batchId) : undefined;
    if (!batch || batch.job_id !== job.id) throw notFound(`scoring batch ${batchId} of job ${job.id}`);
    if (batch.answered_at !== null)
      throw conflict(`scoring batch ${batchId} was answered already`, "batch_answered");
    const { items, rewardNames } = toScoringBatch(batch);
    const answer = checkedAnswer(await readJson(c), items.length, rewardNames);
    if (!(await scoring.answer(batchId, answer)))
      throw conflict(`scoring batch ${batchId} was answered already`, "batch_answered");
    return c.json({ batchId, step: batch.step, answered: "rewards" in answer ? "rewards" : "error" });
  });
  return app;
}
