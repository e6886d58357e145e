// A GRPO trainer's reward functions, run here in the trainer's process (svc
// start), never in the server (docs/post-training.md#rewards-in-typescript):
// while its job runs, this long-polls POST /v1/jobs/:id/scoring/claim for the
// job's next batch of sampled completions, runs every reward function on each
// and answers POST /v1/jobs/:id/scoring/:batchId. A function that throws or
// returns anything but a finite number makes the answer an error naming the
// row and reward (the engine's own check, scoreBatch), which fails that step
// (the engine's message adds the step): nothing is trained on it.
import { scoreBatch } from "@svc/engine";
import {
  type ChatMessage,
  type JobReward,
  SCORING_CLAIM_WAIT_S,
  type ScoringAnswer,
  type ScoringBatch,
  type ScoringClaimResponse,
} from "@svc/wire";
import { type CloudApiClient, CloudApiError } from "./client.js";

/** What a reward function is given about one sampled completion. */
export interface RewardInput {
  /** The text of the prompt's last user message. */
  prompt: string;
  /** The prompt's messages (the dataset row's `messages`). */
  messages: ChatMessage[];
  /** The sampled completion's text. */
  completion: string;
  /** The whole dataset row: its messages and any other field (a reference answer, ...). */
  row: Record<string, unknown>;
  /** The row's 1-based line in the training file. */
  rowNumber: number;
  /** The training step (1-based). */
  step: number;
  /** "eval": a completion of the job's eval set (its rewards are reported, never trained on). */
  set?: "eval";
}

/** A reward: a finite number for one completion (higher is better). */
export type RewardFunction = (input: RewardInput) => number | Promise<number>;

/** A reward function with its name in the step logs and its weight in the sum. */
export interface NamedReward {
  name: string;
  fn: RewardFunction;
  weight: number;
}

/** What POST /v1/jobs stores of the rewards: names and weights, not code. */
export const jobRewards = (rewards: readonly NamedReward[]): JobReward[] =>
  rewards.map(({ name, weight }) => (weight === 1 ? { name } : { name, weight }));

/** One batch scored (or refused), for svc start's progress. */
export interface ScoringNotice {
  step: number;
  completions: number;
  rewardNames: string[];
  seconds: number;
  /** The step's error, when a reward function threw or returned a non-finite number. */
  error?: string;
}

/** Scores one batch: every reward function on every completion, checked as the engine checks scores. */
export async function scoreWithRewards(
  batch: ScoringBatch,
  rewards: readonly NamedReward[],
): Promise<ScoringAnswer> {
  const byName = new Map(rewards.map((r) => [r.name, r]));
  const names = batch.rewardNames;
  const missing = names.find((name) => !byName.has(name));
  if (missing !== undefined)
    return {
      error: `this trainer has no reward "${missing}" (it has ${[...byName.keys()].join(", ")}): is it the job's trainer?`,
    };
  const scores: unknown[][] = [];
  for (const item of batch.items) {
    const input: RewardInput = { ...item, step: batch.step };
    const row: unknown[] = [];
    for (const name of names) {
      try {
        row.push(await byName.get(name)!.fn(input));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return {
          error: `row ${item.rowNumber}: reward "${name}" threw: ${message}; nothing was trained on this step`,
        };
      }
    }
    scores.push(row);
  }
  try {
    const items = batch.items.map((item) => ({
      row: item.row as never,
      rowNumber: item.rowNumber,
      completion: "",
    }));
    const weights = names.map(() => 1);
    await scoreBatch(() => scores as number[][], items, names, weights, batch.step);
  } catch (error) {
    // The training process's engine names the step again when it fails it: the message goes without it.
    return { error: (error as Error).message.replace(/^step \d+: /, "") };
  }
  return { rewards: scores as number[][] };
}

export interface ServeRewardsOptions {
  client: CloudApiClient;
  jobId: string;
  rewards: readonly NamedReward[];
  /** Stops serving (the job ended, or the trainer's wait() was stopped). */
  signal: AbortSignal;
  onScored?: (notice: ScoringNotice) => void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener("abort", stop, { once: true });
  });

/**
 * Answers the job's scoring batches until `signal` aborts or the job has
 * finished. A failed request (the API restarting, a network blip) is retried
 * after a pause: meanwhile the job waits, and pauses if this is gone too long.
 */
export async function serveRewards(options: ServeRewardsOptions): Promise<void> {
  const { client, jobId, rewards, signal } = options;
  const base = `/v1/jobs/${encodeURIComponent(jobId)}/scoring`;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const res = await client.request("POST", `${base}/claim`, {
        scoped: true,
        body: {},
        query: { wait: String(SCORING_CLAIM_WAIT_S) },
        signal,
        timeoutMs: (SCORING_CLAIM_WAIT_S + 30) * 1000,
      });
      failures = 0;
      if (res.status === 204) continue;
      const { batch } = (await res.json()) as ScoringClaimResponse;
      const began = performance.now();
      const answer = await scoreWithRewards(batch, rewards);
      try {
        await client.request("POST", `${base}/${encodeURIComponent(batch.id)}`, {
          scoped: true,
          body: answer,
          signal,
        });
      } catch (error) {
        // The batch was dropped (the job paused or stopped meanwhile) or answered by another scorer.
        if (!(error instanceof CloudApiError && [404, 409].includes(error.status))) throw error;
        continue;
      }
      options.onScored?.({
        step: batch.step,
        completions: batch.items.length,
        rewardNames: batch.rewardNames,
        seconds: (performance.now() - began) / 1000,
        ...("error" in answer ? { error: answer.error } : {}),
      });
    } catch (error) {
      if (signal.aborted) return;
      // The job is over, or is not this trainer's to score: nothing more to do.
      if (error instanceof CloudApiError && [404, 409].includes(error.status)) return;
      failures++;
      await sleep(Math.min(5000, 250 * 2 ** failures), signal);
    }
  }
}
