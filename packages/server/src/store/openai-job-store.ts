// What the OpenAI fine-tuning API keeps about a job beyond the svc job itself:
// the suffix and metadata it was created with, and whether its ft: model was
// deleted (DELETE /v1/models/{id}). A job made another way (svc start,
// POST /v1/jobs) has no row until its model is deleted. Also the reads the
// OpenAI routes page through: events newest first, a project's org slug.
import type { Kysely, Migration } from "kysely";
import type { Database } from "../db/schema.js";
import { nowIso } from "../ids.js";
import type { StoredJobEvent } from "./job-store.js";

export interface OpenAiJobsTable {
  job_id: string;
  /** null: none given. */
  suffix: string | null;
  /** JSON object of strings, or null. */
  metadata: string | null;
  model_deleted_at: string | null;
  created_at: string;
}

type OpenAiDatabase = Database & { openai_jobs: OpenAiJobsTable };

export const openAiJobsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable("openai_jobs")
      .addColumn("job_id", "text", (c) => c.primaryKey().references("jobs.id"))
      .addColumn("suffix", "text")
      .addColumn("metadata", "text")
      .addColumn("model_deleted_at", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
  },
};

export interface OpenAiJobFacts {
  suffix: string | null;
  metadata: Record<string, string> | null;
  modelDeleted: boolean;
}

const NONE: OpenAiJobFacts = { suffix: null, metadata: null, modelDeleted: false };

export class OpenAiJobStore {
  private readonly db: Kysely<OpenAiDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db as unknown as Kysely<OpenAiDatabase>;
  }

  async insert(jobId: string, suffix: string | null, metadata: Record<string, string> | null): Promise<void> {
    await this.db
      .insertInto("openai_jobs")
      .values({
        job_id: jobId,
        suffix,
        metadata: metadata && JSON.stringify(metadata),
        model_deleted_at: null,
        created_at: nowIso(),
      })
      .execute();
  }

  /** Each job's facts (a job without a row: no suffix, no metadata, model not deleted). */
  async factsOf(jobIds: string[]): Promise<Map<string, OpenAiJobFacts>> {
    const facts = new Map<string, OpenAiJobFacts>(jobIds.map((id) => [id, NONE]));
    if (jobIds.length === 0) return facts;
    const rows = await this.db.selectFrom("openai_jobs").selectAll().where("job_id", "in", jobIds).execute();
    for (const r of rows)
      facts.set(r.job_id, {
        suffix: r.suffix,
        metadata: r.metadata === null ? null : (JSON.parse(r.metadata) as Record<string, string>),
        modelDeleted: r.model_deleted_at !== null,
      });
    return facts;
  }

  async facts(jobId: string): Promise<OpenAiJobFacts> {
    return (await this.factsOf([jobId])).get(jobId) ?? NONE;
  }

  /** Marks the job's ft: model deleted (a job made outside this API gets its row now). */
  async deleteModel(jobId: string): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto("openai_jobs")
      .values({ job_id: jobId, suffix: null, metadata: null, model_deleted_at: now, created_at: now })
      .onConflict((oc) => oc.column("job_id").doUpdateSet({ model_deleted_at: now }))
      .execute();
  }

  /** The slug of the org that owns a project. */
  async orgSlugOf(projectId: string): Promise<string> {
    const row = await this.db
      .selectFrom("projects")
      .innerJoin("orgs", "orgs.id", "projects.org_id")
      .select("orgs.slug")
      .where("projects.id", "=", projectId)
      .executeTakeFirstOrThrow();
    return row.slug;
  }

  /** The planned steps of the job's latest run (its last training.started), or null before it started. */
  async totalSteps(jobId: string): Promise<number | null> {
    const row = await this.db
      .selectFrom("job_events")
      .select("payload")
      .where("job_id", "=", jobId)
      .where("type", "=", "training.started")
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    return row ? ((JSON.parse(row.payload) as { totalSteps?: number }).totalSteps ?? null) : null;
  }

  /** Up to `limit` of a job's events (before `beforeSeq` when given), newest first; `end` sentinels left out. */
  async eventsNewestFirst(jobId: string, beforeSeq: number | null, limit: number): Promise<StoredJobEvent[]> {
    let query = this.db
      .selectFrom("job_events")
      .select(["seq", "type", "payload"])
      .where("job_id", "=", jobId)
      .where("type", "!=", "end");
    if (beforeSeq !== null) query = query.where("seq", "<", beforeSeq);
    const rows = await query.orderBy("seq", "desc").limit(limit).execute();
    return rows.map((r) => ({ seq: Number(r.seq), type: r.type as StoredJobEvent["type"], data: r.payload }));
  }
}
