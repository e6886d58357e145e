// The worker's side of trainer rewards (docs/post-training.md#rewards-in-typescript):
// a GRPO training process that needs the trainer's scores for a step sends a
// "score" request; this stores it as a scoring batch, waits for the trainer's
// answer (it comes through the API, maybe another process: routes/job-scoring.ts)
// and hands it back. When no claim for the job came within the scorer timeout
// (the trainer's process is gone), the job is paused with SCORER_GONE_REASON
// instead: it never trains on missing rewards, and it resumes when a scorer
// claims again.
import { SCORER_GONE_REASON } from "@svc/wire";
import { ScoringStore, scorerTimeoutMs } from "../store/scoring-store.js";
import type { Store } from "../store/store.js";
import type { ScoreReply, ScoreRequest } from "./training-protocol.js";

const POLL_MS = 200;
const FIRST_CLAIM_GRACE = 4;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ScoreWait {
  store: Store;
  jobId: string;
  /** Whether the job's process is being stopped (cancel, pause, shutdown): the batch is dropped. */
  stopping: () => boolean;
  /** Pauses the job here at once (its pause flag, with the reason, is stored first). */
  pause: () => void;
}

/** The trainer's answer to one score request, or null when the job stops (or pauses) before it comes. */
export async function awaitTrainerScores(wait: ScoreWait, request: ScoreRequest): Promise<ScoreReply | null> {
  const scoring = new ScoringStore(wait.store.db);
  // A job's process asks for one batch at a time: an open one is an earlier process's (it crashed), unanswerable now.
  await scoring.abandon(wait.jobId);
  const id = await scoring.create(wait.jobId, request.step, request.rewardNames, request.items);
  const timeout = scorerTimeoutMs();
  for (;;) {
    await sleep(POLL_MS);
    if (wait.stopping()) {
      await scoring.abandon(wait.jobId);
      return null;
    }
    const batch = await scoring.get(id);
    if (!batch) return null;
    if (batch.answered_at !== null)
      return batch.error !== null
        ? { type: "scoreFailed", id: request.id, message: batch.error }
        : { type: "scores", id: request.id, rewards: JSON.parse(batch.rewards!) as number[][] };
    // The scorer's last sign of life: the batch's claim, or a claim poll after it. A job no scorer
    // claimed for yet gets FIRST_CLAIM_GRACE times as long (svc start prints the dataset profile first).
    const seenAt = await scoring.scorerSeenAt(wait.jobId);
    const seen = Math.max(
      ...[batch.created_at, batch.claimed_at, seenAt]
        .filter((t): t is string => t !== null)
        .map((t) => Date.parse(t)),
    );
    if (Date.now() - seen > (seenAt === null ? FIRST_CLAIM_GRACE * timeout : timeout)) {
      console.error(
        `svc worker: job ${wait.jobId}: no scorer claimed step ${request.step}'s completions within ${timeout} ms: pausing it`,
      );
      await scoring.requestPause(wait.jobId, SCORER_GONE_REASON);
      wait.pause();
      await scoring.abandon(wait.jobId);
      return null;
    }
  }
}
