// When a job whose training process or runner crashed starts again, and when
// it fails instead: one rule for the runner that sees its training process
// die (job-runner.ts) and for the sweeper that finds a dead runner's job
// (lease-sweeper.ts), both set by `--job-crash-restarts` and
// `--no-restart-from-scratch`. A restart is the job's next attempt: from its
// last checkpoint, or from step 0 when it has none.

export interface CrashPolicy {
  /**
   * Restarts after crashes in a row without a new checkpoint in between (0: a
   * crash fails the job). A crash after fresh progress always restarts, so a
   * long run survives rare crashes while a crash loop ends.
   */
  crashRestarts: number;
  /** Whether a crash before the job's first checkpoint restarts it from step 0. */
  restartWithoutCheckpoint: boolean;
}

export interface CrashFacts {
  /** Crashes in a row since the job's last checkpoint, this one included. */
  streak: number;
  hasCheckpoint: boolean;
  /** Whether training had begun (a crash while the base model downloaded loses no steps). */
  trainingStarted: boolean;
}

/** null when the job restarts as its next attempt; else why it fails instead. */
export function crashVerdict(policy: CrashPolicy, facts: CrashFacts): string | null {
  if (facts.streak > policy.crashRestarts)
    return policy.crashRestarts === 0
      ? "restarts after a crash are off (--job-crash-restarts 0)"
      : `it crashed ${facts.streak} times in a row without a new checkpoint (--job-crash-restarts ${policy.crashRestarts})`;
  if (!facts.hasCheckpoint && facts.trainingStarted && !policy.restartWithoutCheckpoint)
    return "it had no checkpoint to resume from, and restarts from step 0 are off (--no-restart-from-scratch)";
  return null;
}

/** The error of a job that crashed once too often: the last cause, why it is not restarted, its attempts. */
export function crashFailure(cause: string, why: string, attempt: number): string {
  return `${cause}; ${why}; failed after ${attempt} attempt${attempt === 1 ? "" : "s"}`;
}
