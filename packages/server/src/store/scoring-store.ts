// Scoring batches of GRPO jobs whose rewards are the trainer's code
// (docs/post-training.md#rewards-in-typescript): the worker stores one step's
// completions, the trainer's process claims the batch through the API and
// answers it, and the worker reads the answer back. A table, not a channel
// between processes, so the API and the worker may be separate processes on
// PostgreSQL. Also each job's scorer liveness (when a claim for it last came)
// and why the job was paused for it.
import { SCORER_TIMEOUT_MS, type ScoringBatch, type ScoringItem } from "@svc/wire";
import type { Kysely, Migration } from "kysely";
import type { Database } from "../db/schema.js";
import { nowIso, uuidv7 } from "../ids.js";

export interface ScoringBatchesTable {
  id: string;
  job_id: string;
  step: number;
  /** JSON: the reward names, in the order answers list them. */
  reward_names: string;
  /** JSON: ScoringItem[]. */
  items: string;
  /** JSON number[][] once answered with rewards. */
  rewards: string | null;
  /** The trainer's error once answered with one. */
  error: string | null;
  created_at: string;
  claimed_at: string | null;
  answered_at: string | null;
}

type ScoringDatabase = Database & { scoring_batches: ScoringBatchesTable };

export const scoringMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("scoring_batches")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("job_id", "text", (c) => c.notNull().references("jobs.id"))
      .addColumn("step", "integer", (c) => c.notNull())
      .addColumn("reward_names", "text", (c) => c.notNull())
      .addColumn("items", "text", (c) => c.notNull())
      .addColumn("rewards", "text")
      .addColumn("error", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("claimed_at", "text")
      .addColumn("answered_at", "text")
      .execute();
    await db.schema.createIndex("scoring_batches_job").on("scoring_batches").column("job_id").execute();
    await db.schema.alterTable("jobs").addColumn("paused_reason", "text").execute();
    await db.schema.alterTable("jobs").addColumn("scorer_seen_at", "text").execute();
  },
};

/** How long a job waits for its scorer (SCORER_TIMEOUT_MS; SVC_SCORER_TIMEOUT_MS overrides it, tests shorten it). */
export function scorerTimeoutMs(): number {
  const n = Number(process.env.SVC_SCORER_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : SCORER_TIMEOUT_MS;
}

export const toScoringBatch = (r: ScoringBatchesTable): ScoringBatch => ({
  id: r.id,
  jobId: r.job_id,
  step: r.step,
  rewardNames: JSON.parse(r.reward_names) as string[],
  items: JSON.parse(r.items) as ScoringItem[],
  createdAt: r.created_at,
});

export class ScoringStore {
  private readonly db: Kysely<ScoringDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db as unknown as Kysely<ScoringDatabase>;
  }

  /** Stores a batch waiting for the trainer; returns its id. */
  async create(jobId: string, step: number, rewardNames: string[], items: ScoringItem[]): Promise<string> {
    const id = uuidv7();
    await this.db
      .insertInto("scoring_batches")
      .values({
        id,
        job_id: jobId,
        step,
        reward_names: JSON.stringify(rewardNames),
        items: JSON.stringify(items),
        rewards: null,
        error: null,
        created_at: nowIso(),
        claimed_at: null,
        answered_at: null,
      })
      .execute();
    return id;
  }

  async get(id: string): Promise<ScoringBatchesTable | undefined> {
    return this.db.selectFrom("scoring_batches").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /**
   * Hands out the job's oldest unanswered batch that nobody claimed, or whose
   * claim is older than `reclaimAfterMs` (its claimant died or lost the
   * response); null when there is none.
   */
  async claim(jobId: string, reclaimAfterMs: number): Promise<ScoringBatchesTable | null> {
    for (;;) {
      const stale = new Date(Date.now() - reclaimAfterMs).toISOString();
      const row = await this.db
        .selectFrom("scoring_batches")
        .selectAll()
        .where("job_id", "=", jobId)
        .where("answered_at", "is", null)
        .where((eb) => eb.or([eb("claimed_at", "is", null), eb("claimed_at", "<", stale)]))
        .orderBy("id")
        .executeTakeFirst();
      if (!row) return null;
      const claimedAt = nowIso();
      let q = this.db.updateTable("scoring_batches").set({ claimed_at: claimedAt }).where("id", "=", row.id);
      q =
        row.claimed_at === null
          ? q.where("claimed_at", "is", null)
          : q.where("claimed_at", "=", row.claimed_at);
      const r = await q.executeTakeFirst();
      // Another claim (another process) took it first: try the next one.
      if (Number(r.numUpdatedRows) === 1) return { ...row, claimed_at: claimedAt };
    }
  }

  /** Records the trainer's answer; false when the batch was answered (or abandoned) already. */
  async answer(id: string, answer: { rewards: number[][] } | { error: string }): Promise<boolean> {
    const r = await this.db
      .updateTable("scoring_batches")
      .set({
        rewards: "rewards" in answer ? JSON.stringify(answer.rewards) : null,
        error: "error" in answer ? answer.error : null,
        answered_at: nowIso(),
      })
      .where("id", "=", id)
      .where("answered_at", "is", null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Drops the job's unanswered batches: the training process that asked for them has stopped. */
  async abandon(jobId: string): Promise<void> {
    await this.db
      .deleteFrom("scoring_batches")
      .where("job_id", "=", jobId)
      .where("answered_at", "is", null)
      .execute();
  }

  /** Notes that the job's scorer is polling. */
  async seen(jobId: string): Promise<void> {
    await this.db.updateTable("jobs").set({ scorer_seen_at: nowIso() }).where("id", "=", jobId).execute();
  }

  async scorerSeenAt(jobId: string): Promise<string | null> {
    const r = await this.db
      .selectFrom("jobs")
      .select("scorer_seen_at")
      .where("id", "=", jobId)
      .executeTakeFirst();
    return r?.scorer_seen_at ?? null;
  }

  /** Asks the job's worker to pause it for `reason` (the worker polls pause_requested). */
  async requestPause(jobId: string, reason: string): Promise<void> {
    await this.db
      .updateTable("jobs")
      .set({ pause_requested: 1, paused_reason: reason })
      .where("id", "=", jobId)
      .where("status", "=", "running")
      .execute();
  }
}
