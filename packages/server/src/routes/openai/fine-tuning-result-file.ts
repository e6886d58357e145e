// A fine-tuning job's result file: OpenAI's metrics CSV, one row a step
// (docs/openai-fine-tuning.md#result-files). Its first columns are OpenAI's
// supervised ones; a DPO job adds its preference figures and a reinforcement
// job its reward figures, each column named as the step's metrics event names
// that number (metricsOf), so the CSV and the events never disagree. A number
// a step did not compute (no eval at that step, no KL at beta 0) is empty.

import type { TrainingMethod } from "@svc/wire";
import type { ServerContext } from "../../context.js";
import { toJob } from "../../store/job-store.js";
import { metricsOf } from "./fine-tuning-job-events.js";
import { PREFERENCE_METRICS } from "./fine-tuning-method.js";
import { REWARD_METRICS } from "./fine-tuning-reinforcement.js";
import { stepLogs } from "./fine-tuning-step-logs.js";

/** OpenAI's supervised columns, each with the metrics event's name for its number. */
const BASE_COLUMNS: [column: string, metric: string][] = [
  ["train_loss", "train_loss"],
  ["train_accuracy", "train_mean_token_accuracy"],
  ["valid_loss", "valid_loss"],
  ["valid_mean_token_accuracy", "valid_mean_token_accuracy"],
];

const METHOD_COLUMNS: Record<TrainingMethod, string[]> = {
  sft: [],
  dpo: PREFERENCE_METRICS,
  grpo: REWARD_METRICS,
};

/** The CSV's columns after `step` for a job of this method, with the metric each reads. */
export function csvColumns(method: TrainingMethod): [column: string, metric: string][] {
  return [...BASE_COLUMNS, ...METHOD_COLUMNS[method].map((name): [string, string] => [name, name])];
}

export async function metricsCsv(ctx: ServerContext, jobId: string): Promise<string> {
  const row = await ctx.store.jobs.get(jobId);
  const columns = csvColumns(row ? toJob(row).method : "sft");
  const lines = [["step", ...columns.map(([column]) => column)].join(",")];
  for (const log of await stepLogs(ctx, jobId)) {
    const metrics = metricsOf(log);
    lines.push(
      [log.step, ...columns.map(([, metric]) => (metric in metrics ? String(metrics[metric]) : ""))].join(
        ",",
      ),
    );
  }
  return `${lines.join("\n")}\n`;
}
