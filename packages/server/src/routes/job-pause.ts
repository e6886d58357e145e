// Pause and resume: POST /v1/jobs/:id/pause and …/resume (the OpenAI
// fine-tuning API's …/pause and …/resume call the same functions). A queued
// job pauses at once; a running one is flagged, and its worker stops it the
// way a shutdown does (the engine writes a checkpoint), but the job then waits
// as "paused" instead of going back to the queue (job-transitions.ts paused).
// Resume queues it again, to go on from that checkpoint with the same step
// count, data order and optimizer state as if it had never stopped.

import type { Answer, Job } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { conflict } from "../http/api-error.js";
import type { JobRow } from "../store/job-store.js";
import { toJob } from "../store/job-store.js";
import { jobOr404 } from "./access.js";

const finished = (job: JobRow) =>
  job.status === "completed" || job.status === "failed" || job.status === "cancelled";

/** Pauses a job that has not finished; a paused one is returned as it is. */
export async function pauseJob(ctx: ServerContext, job: JobRow): Promise<Job> {
  if (finished(job)) throw conflict(`job ${job.id} has already finished (${job.status})`, "job_finished");
  if (job.status === "paused") return toJob(job);
  const after = await ctx.store.jobs.requestPause(job.id);
  if (after?.status === "running") ctx.pauseRunning(job.id);
  return toJob(after ?? job);
}

/**
 * Resumes a paused job (queued again). Anything else is 409 job_not_paused, a
 * running job whose pause its worker has not finished yet included: resume it once it is paused.
 */
export async function resumeJob(ctx: ServerContext, job: JobRow): Promise<Job> {
  if (!(await ctx.store.jobs.resume(job.id))) {
    const now = (await ctx.store.jobs.get(job.id)) ?? job;
    const pausing = now.status === "running" && now.pause_requested === 1 ? ", pausing" : "";
    throw conflict(`job ${job.id} is not paused (${now.status}${pausing})`, "job_not_paused");
  }
  ctx.wakeWorkers();
  return toJob((await ctx.store.jobs.get(job.id)) ?? job);
}

export function jobPauseRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/jobs/:id/pause", async (c) => {
    return c.json({
      job: await pauseJob(ctx, await jobOr404(ctx, c, c.req.param("id"))),
    } satisfies Answer<"pauseJob">);
  });
  app.post("/v1/jobs/:id/resume", async (c) => {
    return c.json({
      job: await resumeJob(ctx, await jobOr404(ctx, c, c.req.param("id"))),
    } satisfies Answer<"resumeJob">);
  });
  return app;
}
