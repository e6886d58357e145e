// How the OpenAI API's ids name svc's objects (docs/openai-fine-tuning.md#ids):
// a file is a dataset (file-<dataset id>), a job's metrics CSV is
// file-result-<job id>, a fine-tuning job is an svc job (ftjob-<job id>; the
// bare job id is accepted too), its events ftevent-<job id>-<event seq>, its
// checkpoints ftckpt-<job id>-<step>; a job's model is
// ft:<base model>:<org slug>:<suffix>:<job id>, a checkpoint's adds :ckpt-step-<N>.

import { MAX_STORED_INTEGER } from "@svc/wire";
import { UUID_PATTERN } from "../../ids.js";

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

const after = (prefix: string, id: string): string | null => {
  if (!id.startsWith(prefix)) return null;
  const rest = id.slice(prefix.length);
  return UUID_PATTERN.test(rest) ? rest : null;
};

export const fileId = (datasetId: string): string => `file-${datasetId}`;
export const datasetIdOf = (id: string): string | null => after("file-", id);

export const resultFileId = (jobId: string): string => `file-result-${jobId}`;
export const resultJobIdOf = (id: string): string | null => after("file-result-", id);

export const fineTuningJobId = (jobId: string): string => `ftjob-${jobId}`;
export const jobIdOf = (id: string): string | null => (UUID_PATTERN.test(id) ? id : after("ftjob-", id));

export const eventId = (jobId: string, seq: number): string => `ftevent-${jobId}-${seq}`;
/** A stored count (an event seq, a step) written plainly in decimal, or null. */
const storedInteger = (digits: string | undefined): number | null => {
  const value = Number(digits);
  return digits !== undefined && value <= MAX_STORED_INTEGER ? value : null;
};

/** The event seq of an event id of `jobId`, or null. */
export function eventSeqOf(jobId: string, id: string): number | null {
  return storedInteger(new RegExp(`^ftevent-${jobId}-([1-9][0-9]{0,15})$`).exec(id)?.[1]);
}

export const checkpointId = (jobId: string, step: number): string => `ftckpt-${jobId}-${step}`;
/** The parts a fine-tuned model id is made of. */
export interface FineTunedModelName {
  baseModel: string;
  orgSlug: string;
  /** "" when the job was given none. */
  suffix: string;
  jobId: string;
}

export const fineTunedModelId = (m: FineTunedModelName): string =>
  `ft:${m.baseModel}:${m.orgSlug}:${m.suffix}:${m.jobId}`;

export const checkpointModelId = (m: FineTunedModelName, step: number): string =>
  `${fineTunedModelId(m)}:ckpt-step-${step}`;

const FT_MODEL = new RegExp(`^ft:(.+):(${UUID})(?::ckpt-step-([1-9][0-9]{0,15}))?$`);

/**
 * The job and checkpoint step an ft: model id names, with the id's part before
 * the job id (base model, org and suffix), which must equal the job's own; or null.
 */
export function parseFineTunedModel(
  id: string,
): { jobId: string; step: number | null; prefix: string } | null {
  const match = FT_MODEL.exec(id);
  if (!match) return null;
  const step = match[3] === undefined ? null : storedInteger(match[3]);
  if (match[3] !== undefined && step === null) return null;
  return { prefix: `ft:${match[1]}`, jobId: match[2], step };
}
