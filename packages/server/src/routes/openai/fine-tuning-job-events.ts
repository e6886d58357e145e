// A fine-tuning job's events, checkpoints and metrics CSV, read from the svc
// job's stored events and artifacts:
// GET /v1/fine_tuning/jobs/{id}/events (fine_tuning.job.event, newest first;
// after = an event id, limit, has_more) and …/checkpoints
// (fine_tuning.job.checkpoint, newest first). The metrics CSV, the job's result
// file, is fine-tuning-result-file.ts.

import type { JobEvent, TrainingLogEvent } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../../context.js";
import { OpenAiError } from "../../http/openai-error.js";
import { type StoredJobEvent, toJob } from "../../store/job-store.js";
import { OpenAiJobStore } from "../../store/openai-job-store.js";
import { modelNameOf, unixSeconds } from "./fine-tuning-job-object.js";
import { fineTuningJobOr404 } from "./fine-tuning-jobs.js";
import { preferenceMetricsOf } from "./fine-tuning-method.js";
import { rewardMetricsOf } from "./fine-tuning-reinforcement.js";
import { stepLogs } from "./fine-tuning-step-logs.js";
import { checkpointId, checkpointModelId, eventId, eventSeqOf, fineTuningJobId } from "./openai-ids.js";
import { checkQuery, limitQuery, pageAfter } from "./openai-list.js";

interface FineTuningEvent {
  id: string;
  object: "fine_tuning.job.event";
  created_at: number;
  level: "info" | "warn" | "error";
  message: string;
  type: "message" | "metrics";
  data: Record<string, unknown> | null;
}

/** A training.log step's numbers under OpenAI's names (absent numbers left out). */
export function metricsOf(log: TrainingLogEvent): Record<string, number> {
  const named: [string, number | null][] = [
    ["train_loss", log.loss],
    ["train_mean_token_accuracy", log.tokenAccuracy ?? null],
    ["valid_loss", log.evalLoss],
    ["valid_mean_token_accuracy", log.evalTokenAccuracy],
    ["learning_rate", log.learningRate],
    ["epoch", log.epoch],
  ];
  return {
    ...Object.fromEntries(named.filter((entry): entry is [string, number] => entry[1] !== null)),
    ...preferenceMetricsOf(log),
    ...rewardMetricsOf(log),
  };
}

/** What OpenAI's event says for an svc event: level, message, and for a step its metrics. */
function describeEvent(
  event: JobEvent,
  totalSteps: number | null,
): Omit<FineTuningEvent, "id" | "object" | "created_at"> {
  const message = (text: string, level: FineTuningEvent["level"] = "info") =>
    ({ level, message: text, type: "message", data: null }) as const;
  switch (event.type) {
    case "training.started":
      return message(
        event.resumedFromStep
          ? `Fine-tuning job resumed from step ${event.resumedFromStep}`
          : "Fine-tuning job started",
      );
    case "training.log": {
      const loss = event.loss === null ? "" : `: training loss=${event.loss.toFixed(4)}`;
      const valid = event.evalLoss === null ? "" : `, validation loss=${event.evalLoss.toFixed(4)}`;
      const of = totalSteps === null ? "" : `/${totalSteps}`;
      return {
        level: "info",
        message: `Step ${event.step}${of}${loss}${valid}`,
        type: "metrics",
        data: {
          step: event.step,
          ...(totalSteps === null ? {} : { total_steps: totalSteps }),
          ...metricsOf(event),
        },
      };
    }
    case "checkpoint.saved":
      return message(`Checkpoint created at step ${event.step}`);
    case "training.completed":
      return message("The job has successfully completed");
    case "training.failed":
      return message(`The job failed: ${event.error}`, "error");
    case "training.cancelled":
      return message("The job was cancelled");
    case "training.paused":
      return message(event.step === null ? "The job was paused" : `The job was paused at step ${event.step}`);
    case "training.resumed":
      return message("The job was resumed");
    case "download.progress":
      return message(`Downloading ${event.repo}: ${event.bytesDone} of ${event.bytesTotal} bytes`);
    case "download.completed":
      return message("Download completed");
    default:
      return message(event.type);
  }
}

function fineTuningEvent(jobId: string, stored: StoredJobEvent, totalSteps: number | null): FineTuningEvent {
  const event = JSON.parse(stored.data) as JobEvent;
  return {
    id: eventId(jobId, stored.seq),
    object: "fine_tuning.job.event",
    created_at: unixSeconds(event.timestamp),
    ...describeEvent(event, totalSteps),
  };
}

export function fineTuningEventRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const facts = new OpenAiJobStore(ctx.store.db);

  app.get("/v1/fine_tuning/jobs/:id/events", async (c) => {
    checkQuery(c, ["after", "limit"]);
    const job = await fineTuningJobOr404(ctx, c, c.req.param("id"));
    const limit = limitQuery(c, 100, 20);
    const after = c.req.query("after");
    let before: number | null = null;
    if (after !== undefined) {
      const seq = eventSeqOf(job.id, after);
      if (seq === null)
        throw new OpenAiError(
          400,
          "invalid_request",
          `"after" (query parameter): ${after} is no event of ${fineTuningJobId(job.id)}`,
          "after",
        );
      before = seq;
    }
    const totalSteps = await facts.totalSteps(job.id);
    const rows = await facts.eventsNewestFirst(job.id, before, limit + 1);
    const data = rows.slice(0, limit).map((row) => fineTuningEvent(job.id, row, totalSteps));
    return c.json({ object: "list", data, has_more: rows.length > limit });
  });

  app.get("/v1/fine_tuning/jobs/:id/checkpoints", async (c) => {
    checkQuery(c, ["after", "limit"]);
    const row = await fineTuningJobOr404(ctx, c, c.req.param("id"));
    const job = toJob(row);
    const limit = limitQuery(c, 100, 10);
    const name = modelNameOf(job, await facts.orgSlugOf(job.projectId), await facts.facts(job.id));
    const logs = new Map((await stepLogs(ctx, job.id)).map((log) => [log.step, log]));
    const checkpoints = (await ctx.store.jobs.artifacts(job.id))
      .filter((artifact) => artifact.kind === "checkpoint")
      .sort((a, b) => b.step - a.step)
      .map((artifact) => {
        const log = logs.get(artifact.step);
        return {
          id: checkpointId(job.id, artifact.step),
          object: "fine_tuning.job.checkpoint" as const,
          created_at: unixSeconds(artifact.created_at),
          fine_tuned_model_checkpoint: checkpointModelId(name, artifact.step),
          fine_tuning_job_id: fineTuningJobId(job.id),
          step_number: artifact.step,
          metrics: {
            step: artifact.step,
            ...(log ? metricsOf(log) : {}),
          },
        };
      });
    return c.json({ object: "list", ...pageAfter(checkpoints, c.req.query("after"), limit) });
  });
  return app;
}
