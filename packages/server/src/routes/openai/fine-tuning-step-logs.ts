// A job's steps as its stored training.log events give them, for the OpenAI
// routes that read them back: the metrics events' and checkpoints' figures,
// the metrics CSV, and the job's trained tokens.
import type { TrainingLogEvent } from "@svc/wire";
import type { ServerContext } from "../../context.js";

/** Each step's training.log, the latest run's where a resumed run logged a step again, in step order. */
export async function stepLogs(ctx: ServerContext, jobId: string): Promise<TrainingLogEvent[]> {
  const byStep = new Map<number, TrainingLogEvent>();
  for (const stored of await ctx.store.jobs.eventsAfter(jobId, 0)) {
    if (stored.type !== "training.log") continue;
    const log = JSON.parse(stored.data) as TrainingLogEvent;
    byStep.set(log.step, log);
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

/**
 * The tokens a succeeded job trained on (OpenAI's trained_tokens): the sum of its
 * steps' trainedTokens, each step counted once (the run that finished it). null
 * when a step did not report them: a job trained before svc counted them, or on
 * a backend that does not count them (the torch backend).
 */
export async function trainedTokensOf(ctx: ServerContext, jobId: string): Promise<number | null> {
  const logs = await stepLogs(ctx, jobId);
  if (logs.length === 0 || logs.some((log) => log.trainedTokens === undefined)) return null;
  return logs.reduce((sum, log) => sum + (log.trainedTokens ?? 0), 0);
}
