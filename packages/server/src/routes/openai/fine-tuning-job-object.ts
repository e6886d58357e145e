// An svc job as OpenAI's fine_tuning.job object. Every svc job is one, however
// it was made: one from svc start has no suffix or metadata.

import type { Job, JobStatus } from "@svc/wire";
import type { OpenAiJobFacts } from "../../store/openai-job-store.js";
import { type SupervisedHyperparameters, seedOf } from "./fine-tuning-hyperparameters.js";
import { hyperparametersOf, type JobMethodObject, methodObjectOf } from "./fine-tuning-method.js";
import {
  type FineTunedModelName,
  fileId,
  fineTunedModelId,
  fineTuningJobId,
  resultFileId,
} from "./openai-ids.js";

/** svc's job statuses as OpenAI's (svc validates files at upload, so no job is ever "validating_files"). */
const STATUS: Record<JobStatus, string> = {
  queued: "queued",
  running: "running",
  paused: "paused",
  completed: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
};

export const unixSeconds = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

export interface FineTuningJobObject {
  id: string;
  object: "fine_tuning.job";
  created_at: number;
  finished_at: number | null;
  model: string;
  fine_tuned_model: string | null;
  organization_id: string;
  status: string;
  hyperparameters: SupervisedHyperparameters;
  method: JobMethodObject;
  training_file: string;
  validation_file: string | null;
  result_files: string[];
  trained_tokens: number | null;
  error: { code: string; message: string; param: string | null } | null;
  seed: number;
  estimated_finish: number | null;
  integrations: null;
  metadata: Record<string, string> | null;
  user_provided_suffix: string | null;
}

export const modelNameOf = (job: Job, orgSlug: string, facts: OpenAiJobFacts): FineTunedModelName => ({
  baseModel: job.baseModel,
  orgSlug,
  suffix: facts.suffix ?? "",
  jobId: job.id,
});

/** `trainedTokens`: a succeeded job's (fine-tuning-step-logs.ts trainedTokensOf); null while it has none. */
export function fineTuningJobObject(
  job: Job,
  orgSlug: string,
  facts: OpenAiJobFacts,
  trainedTokens: number | null = null,
): FineTuningJobObject {
  const hyperparameters = hyperparametersOf(job);
  // A dry run completes without training: it has no model and no metrics.
  const succeeded = job.status === "completed" && !job.dryRun;
  return {
    id: fineTuningJobId(job.id),
    object: "fine_tuning.job",
    created_at: unixSeconds(job.createdAt),
    finished_at: job.finishedAt ? unixSeconds(job.finishedAt) : null,
    model: job.baseModel,
    fine_tuned_model: succeeded ? fineTunedModelId(modelNameOf(job, orgSlug, facts)) : null,
    organization_id: orgSlug,
    status: STATUS[job.status],
    hyperparameters,
    method: methodObjectOf(job),
    training_file: fileId(job.datasetId),
    validation_file: job.evalDatasetId ? fileId(job.evalDatasetId) : null,
    result_files: succeeded ? [resultFileId(job.id)] : [],
    trained_tokens: succeeded ? trainedTokens : null,
    error:
      job.status === "failed"
        ? { code: "training_failed", message: job.error ?? "the job failed", param: null }
        : null,
    seed: seedOf(job.hyperparameters),
    estimated_finish: null,
    integrations: null,
    metadata: facts.metadata,
    user_provided_suffix: facts.suffix,
  };
}
