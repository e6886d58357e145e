// Finds jobs whose runner died (a server or `svc worker` killed, or a machine
// lost) and starts each again as its next attempt: from its last checkpoint,
// or from step 0 when it saved none, under the same crash policy as a crashed
// training process (crash-policy.ts); a job that crashes its runner too often
// fails, with its attempts and the last cause. A runner is gone when its lease
// lapsed, or on SQLite (one machine, several processes may share the file)
// at once when the process named in its lease has exited.
import { JobRecoveryStore } from "../store/job-recovery-store.js";
import type { JobRow } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import { type CrashPolicy, crashFailure, crashVerdict } from "./crash-policy.js";
import { runnerProcessGone } from "./runner-liveness.js";

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;
  private readonly recovery: JobRecoveryStore;

  constructor(
    private readonly store: Store,
    private readonly intervalMs: number,
    private readonly policy: CrashPolicy,
  ) {
    this.recovery = new JobRecoveryStore(store.db);
  }

  /** Recovers once now, then every interval. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(
      () => void this.sweep().catch((e) => console.error("svc: lease sweep failed:", e)),
      this.intervalMs,
    );
    this.timer.unref();
  }

  /** Settles every job whose runner is gone; returns how many it found. */
  async sweep(): Promise<number> {
    const ownerGone = this.store.kind === "sqlite" ? runnerProcessGone : undefined;
    const orphans = await this.recovery.orphanedRunning(ownerGone);
    for (const job of orphans) await this.recover(job);
    return orphans.length;
  }

  private async recover(job: JobRow): Promise<void> {
    const jobs = this.store.jobs;
    const guard = { status: ["running" as const], owner: job.lease_owner ?? "" };
    const checkpoint = await jobs.latestCheckpoint(job.id);
    const step = await this.recovery.lastLoggedStep(job.id);
    const cause = `the process running this job (${job.lease_owner}) stopped unexpectedly${step !== null ? ` at step ${step}` : ""}${checkpoint ? ` after ${checkpoint.name}` : " before it saved a checkpoint"}`;
    const why = crashVerdict(this.policy, {
      streak: job.crash_streak + 1,
      hasCheckpoint: checkpoint !== undefined,
      trainingStarted: await jobs.hasEvent(job.id, "training.started"),
    });
    if (why === null) {
      const moved = await jobs.transition(
        job.id,
        guard,
        {
          status: "queued",
          lease_owner: null,
          lease_expires_at: null,
          resume_from: checkpoint?.dir ?? null,
          attempt: job.attempt + 1,
          crash_streak: job.crash_streak + 1,
          last_crash: cause,
        },
        [],
      );
      if (moved)
        console.log(
          `svc: job ${job.id} lost its worker; re-queued to ${checkpoint ? `resume from ${checkpoint.name}` : "start again from step 0"} (attempt ${job.attempt + 1})`,
        );
      return;
    }
    const error = crashFailure(cause, why, job.attempt);
    const failed = await jobs.transition(
      job.id,
      guard,
      {
        status: "failed",
        error,
        finished_at: new Date().toISOString(),
        lease_owner: null,
        lease_expires_at: null,
        crash_streak: job.crash_streak + 1,
        last_crash: cause,
      },
      [{ type: "training.failed", error, step }, { type: "end" }],
    );
    if (failed) console.log(`svc: job ${job.id} lost its worker; marked failed: ${why}`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
