// GRPO rewards written as code in the user's trainer (createTrainer's
// `rewards`): the server never runs them. The job's training process asks for
// scores by storing a scoring batch; the trainer's process (svc start) claims
// it over the cloud API, runs its reward functions and answers
// (docs/post-training.md#rewards-in-typescript).
import type { Iso8601 } from "./common.js";
import type { ChatMessage } from "./inference.js";

/** A reward the job's trainer computes (not the server): its name in the step logs, and its weight (default 1). */
export interface JobReward {
  name: string;
  weight?: number;
}

/** A trainer reward's name: what the step logs key its mean by, and what its errors name. */
export const REWARD_NAME = /^[A-Za-z_][\w.-]{0,63}$/;

/** Most trainer rewards one job sums (as graders, MAX_JOB_GRADERS). */
export const MAX_JOB_REWARDS = 16;

/** One sampled completion to score. */
export interface ScoringItem {
  /** The prompt row's 1-based line in the training file. */
  rowNumber: number;
  /** The whole dataset row: its messages and every other field (a reference answer, ...). */
  row: Record<string, unknown>;
  /** The prompt: the row's messages, which end before the answer. */
  messages: ChatMessage[];
  /** The text of the prompt's last user message ("" when it has none). */
  prompt: string;
  /** The sampled completion's text. */
  completion: string;
  /** "eval": a held-out eval's completion (the job's evalDatasetId; rowNumber is its line there). */
  set?: "eval";
}

/** What POST /v1/jobs/:id/scoring/claim hands the trainer: one step's completions. */
export interface ScoringBatch {
  id: string;
  jobId: string;
  /** The training step these completions are for (1-based). */
  step: number;
  /** The trainer's rewards, in the order each answer lists them. */
  rewardNames: string[];
  items: ScoringItem[];
  createdAt: Iso8601;
}

export interface ScoringClaimResponse {
  batch: ScoringBatch;
}

/**
 * POST /v1/jobs/:id/scoring/:batchId: per item, one finite number per reward in
 * rewardNames' order; or `error`, which fails the step with that message (a
 * reward function threw or returned a non-finite number).
 */
export type ScoringAnswer = { rewards: number[][] } | { error: string };

/** The most seconds a claim waits for a batch before answering 204 (?wait=, default this). */
export const SCORING_CLAIM_WAIT_S = 20;

/**
 * How long a job with trainer rewards waits for its scorer: a batch that no
 * claim came for in this time (no scorer is polling) pauses the job with
 * SCORER_GONE_REASON. The server's SVC_SCORER_TIMEOUT_MS overrides it.
 */
export const SCORER_TIMEOUT_MS = 30_000;

/** Job.pausedReason of a job whose scorer went away (a claim for it resumes the job). */
export const SCORER_GONE_REASON = "scorer_gone";
