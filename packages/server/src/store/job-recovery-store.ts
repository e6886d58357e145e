// What recovering a job after a crash reads and writes: the running jobs whose
// runner is gone, the last step a crashed run logged, and the move to the
// job's next attempt. Used by the lease sweeper and by a runner whose training
// process crashed (worker/crash-policy.ts decides between restart and failure).
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.js";
import { nowIso } from "../ids.js";
import type { JobRow } from "./job-store.js";

export class JobRecoveryStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The step of the job's latest training.log event (in any run), or null.
   * Scans back from the newest event: a crashed run's last frames are near the end.
   */
  async lastLoggedStep(jobId: string): Promise<number | null> {
    const row = await this.db
      .selectFrom("job_events")
      .select("payload")
      .where("job_id", "=", jobId)
      .where("type", "=", "training.log")
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    const step = row ? (JSON.parse(row.payload) as { step?: unknown }).step : null;
    return typeof step === "number" ? step : null;
  }

  /**
   * Running jobs whose runner is gone: its lease lapsed, or `ownerGone` says
   * its process no longer exists (where the sweeper can tell: one machine).
   */
  async orphanedRunning(ownerGone: (owner: string) => boolean = () => false): Promise<JobRow[]> {
    const now = nowIso();
    const running = await this.db.selectFrom("jobs").selectAll().where("status", "=", "running").execute();
    return running.filter(
      (job) =>
        (job.lease_expires_at !== null && job.lease_expires_at < now) ||
        (job.lease_owner !== null && ownerGone(job.lease_owner)),
    );
  }

  /**
   * Records a crash of the job's training process or runner and makes it the
   * next attempt (attempt and crash streak up by one, the cause kept), while
   * `owner` holds it running. Returns the job as it is then, or undefined when
   * `owner` no longer holds it.
   */
  async nextAttemptAfterCrash(id: string, owner: string, cause: string): Promise<JobRow | undefined> {
    return this.db
      .updateTable("jobs")
      .set({
        attempt: sql<number>`attempt + 1`,
        crash_streak: sql<number>`crash_streak + 1`,
        last_crash: cause,
      })
      .where("id", "=", id)
      .where("lease_owner", "=", owner)
      .where("status", "=", "running")
      .returningAll()
      .executeTakeFirst();
  }
}
