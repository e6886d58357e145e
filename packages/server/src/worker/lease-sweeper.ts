// Finds jobs whose worker died (lease lapsed; on SQLite at startup, every job
// still marked running, since only one process uses the file) and re-queues
// them to resume from their last checkpoint, or fails them with the reason
// when no checkpoint was saved. A job whose worker died before training began
// (while it fetched its Hub base model) is re-queued once to start again: nothing
// is lost, and the partial download resumes.
import type { Store } from "../store/store.js";

export const NO_CHECKPOINT_REASON =
  "the process running this job stopped unexpectedly before it saved a checkpoint, so there is nothing to resume from; start the job again";

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    private readonly intervalMs: number,
  ) {}

  /** Recovers once now (all running jobs when `startup` on SQLite), then every interval. */
  async start(): Promise<void> {
    await this.sweep(this.store.kind === "sqlite");
    this.timer = setInterval(
      () => void this.sweep(false).catch((e) => console.error("svc: lease sweep failed:", e)),
      this.intervalMs,
    );
    this.timer.unref();
  }

  async sweep(allRunning: boolean): Promise<number> {
    const orphans = await this.store.jobs.orphanedRunning(allRunning);
    for (const job of orphans) {
      const guard = { status: ["running" as const], owner: job.lease_owner ?? "" };
      const checkpoint = await this.store.jobs.latestCheckpoint(job.id);
      if (checkpoint) {
        await this.store.jobs.transition(
          job.id,
          guard,
          { status: "queued", lease_owner: null, lease_expires_at: null, resume_from: checkpoint.dir },
          [],
        );
        console.log(`svc: job ${job.id} lost its worker; re-queued to resume from ${checkpoint.name}`);
      } else if (job.attempts < 2 && !(await this.store.jobs.hasEvent(job.id, "training.started"))) {
        await this.store.jobs.transition(
          job.id,
          guard,
          { status: "queued", lease_owner: null, lease_expires_at: null, resume_from: null },
          [],
        );
        console.log(`svc: job ${job.id} lost its worker before training started; re-queued`);
      } else {
        await this.store.jobs.transition(
          job.id,
          guard,
          {
            status: "failed",
            error: NO_CHECKPOINT_REASON,
            finished_at: new Date().toISOString(),
            lease_owner: null,
            lease_expires_at: null,
          },
          [{ type: "training.failed", error: NO_CHECKPOINT_REASON, step: null }, { type: "end" }],
        );
        console.log(`svc: job ${job.id} lost its worker before any checkpoint; marked failed`);
      }
    }
    return orphans.length;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
