// Jobs, their stored event log and artifacts, and the job queue. Workers claim
// queued jobs atomically (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one
// UPDATE ... WHERE id = (SELECT ...) RETURNING, which SQLite runs atomically)
// and hold a lease that they renew; a lapsed lease means the worker died.
import type { BaseWeightFormat, TrainingPrecision } from "@svc/engine";
import {
  type AdapterRef,
  type Artifact,
  isJobEventType,
  type Job,
  type JobEvent,
  type JobEventType,
  type JobHyperparameters,
  type TrainingMethod,
} from "@svc/wire";
import { type Kysely, sql, type Transaction } from "kysely";
import type { DatabaseKind } from "../db/connect.js";
import type { ArtifactsTable, Database, JobsTable } from "../db/schema.js";
import { nowIso } from "../ids.js";
import { isUniqueViolation } from "./unique.js";

export type JobRow = JobsTable;

/** A new job's row: its attempt, pause and scorer columns start at their defaults (attempt 1, no crash, no pause). */
type DefaultedColumns =
  | "attempt"
  | "crash_streak"
  | "last_crash"
  | "pause_requested"
  | "paused_reason"
  | "scorer_seen_at";
export type NewJobRow = Omit<JobRow, DefaultedColumns> & Partial<Pick<JobRow, DefaultedColumns>>;

/** An event as the producer hands it over: type and fields, without jobId/timestamp. */
export type NewJobEvent = {
  [T in JobEventType]: Omit<Extract<JobEvent, { type: T }>, "jobId" | "timestamp">;
}[JobEventType];

/**
 * A stored row as an event, its type checked against the wire's list
 * (JOB_EVENT_TYPES): a type no reader knows is an error naming it, never a
 * frame that every client silently ignores.
 */
function storedEvent(r: { seq: number | string | bigint; type: string; payload: string }): StoredJobEvent {
  if (!isJobEventType(r.type))
    throw new Error(`job event ${r.seq} has a type the wire does not list: "${r.type}"`);
  return { seq: Number(r.seq), type: r.type, data: r.payload };
}

export interface StoredJobEvent {
  seq: number;
  type: JobEventType;
  /** The JSON payload exactly as sent on the wire (type, jobId, timestamp and fields). */
  data: string;
}

/** The job's settings riding in its stored hyperparameters (routes/jobs.ts): its method (absent: "sft"), start adapter and precision. */
export type StoredHyperparameters = JobHyperparameters & {
  method?: TrainingMethod;
  startAdapter?: AdapterRef;
  precision?: TrainingPrecision;
  baseWeights?: BaseWeightFormat;
};

/** The stored hyperparameters, and the job's method, start adapter and precision, which ride in them. */
function hyperparametersAndMethod(
  json: string,
): Pick<Job, "hyperparameters" | "method" | "startAdapter" | "precision" | "baseWeights"> {
  // Jobs made before precisions existed trained in fp32 (a new job always stores its precision).
  const {
    method = "sft",
    startAdapter = null,
    precision = "fp32",
    baseWeights = null,
    ...hyperparameters
  } = JSON.parse(json) as StoredHyperparameters;
  return { hyperparameters, method, startAdapter, precision, baseWeights };
}

export const toJob = (r: JobRow): Job => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  status: r.status,
  baseModel: r.base_model,
  baseModelRevision: r.base_model_revision ?? null,
  datasetId: r.dataset_id,
  evalDatasetId: r.eval_dataset_id,
  ...hyperparametersAndMethod(r.hyperparameters),
  dryRun: r.dry_run === 1,
  backend: r.backend ?? "auto",
  queuedReason: null,
  pausedReason: r.status === "paused" ? (r.paused_reason ?? null) : null,
  attempt: r.attempt,
  restartedAfter: r.attempt > 1 ? r.last_crash : null,
  error: r.error,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
});

export const toArtifact = (r: ArtifactsTable): Artifact => ({
  name: r.name,
  kind: r.kind,
  step: r.step,
  files: JSON.parse(r.files) as Artifact["files"],
  createdAt: r.created_at,
});

const leaseUntil = (leaseMs: number) => new Date(Date.now() + leaseMs).toISOString();

export class JobStore {
  /** Called after a commit that appended events to a job (the in-process live feed). */
  onEventsAppended: (jobId: string) => void = () => {};

  constructor(
    private readonly db: Kysely<Database>,
    private readonly kind: DatabaseKind,
  ) {}

  async insert(row: NewJobRow): Promise<Job> {
    const full: JobRow = {
      attempt: 1,
      crash_streak: 0,
      last_crash: null,
      pause_requested: 0,
      paused_reason: null,
      scorer_seen_at: null,
      ...row,
    };
    await this.db.insertInto("jobs").values(full).execute();
    return toJob(full);
  }

  async get(id: string): Promise<JobRow | undefined> {
    return this.db.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Newest first (ids are UUIDv7, so id order is creation order). */
  async list(projectId: string): Promise<Job[]> {
    const rows = await this.db
      .selectFrom("jobs")
      .selectAll()
      .where("project_id", "=", projectId)
      .orderBy("id", "desc")
      .execute();
    return rows.map(toJob);
  }

  /**
   * Claims the oldest queued job for `owner` among those it can run (jobs of
   * its backend and "auto" ones), or returns undefined when none waits. A
   * runner without a GPU leaves "auto" jobs to a GPU runner that has a free
   * slot (seen since `gpuSeenSince`), so they train on the GPU when one is free.
   */
  async claimNext(
    owner: string,
    leaseMs: number,
    runner: { backend: "engine" | "torch"; gpu: boolean; gpuSeenSince: string } = {
      backend: "engine",
      gpu: false,
      gpuSeenSince: nowIso(),
    },
  ): Promise<JobRow | undefined> {
    const now = nowIso();
    const freeGpu = this.db
      .selectFrom("workers")
      .select("owner")
      .where("device", "=", "cuda")
      .where("free_slots", ">", 0)
      .where("seen_at", ">=", runner.gpuSeenSince);
    const pick = this.db
      .selectFrom("jobs")
      .select("id")
      .where("status", "=", "queued")
      .where((eb) =>
        runner.gpu
          ? eb("backend", "in", [runner.backend, "auto"])
          : eb.or([
              eb("backend", "=", runner.backend),
              eb.and([eb("backend", "=", "auto"), eb.not(eb.exists(freeGpu))]),
            ]),
      )
      .orderBy("id")
      .limit(1);
    const row = await this.db
      .updateTable("jobs")
      .set({
        status: "running",
        lease_owner: owner,
        lease_expires_at: leaseUntil(leaseMs),
        started_at: sql<string>`coalesce(started_at, ${now})`,
        attempts: sql<number>`attempts + 1`,
      })
      .where("id", "=", this.kind === "postgres" ? pick.forUpdate().skipLocked() : pick)
      .where("status", "=", "queued")
      .returningAll()
      .executeTakeFirst();
    return row;
  }

  /** Renews the lease; false when this owner no longer holds the job. */
  /** Records the commit sha a Hub base model resolved to. */
  async setBaseModelRevision(id: string, revision: string): Promise<void> {
    await this.db.updateTable("jobs").set({ base_model_revision: revision }).where("id", "=", id).execute();
  }

  async heartbeat(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const r = await this.db
      .updateTable("jobs")
      .set({ lease_expires_at: leaseUntil(leaseMs) })
      .where("id", "=", id)
      .where("lease_owner", "=", owner)
      .where("status", "=", "running")
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async isCancelRequested(id: string): Promise<boolean> {
    const r = await this.db
      .selectFrom("jobs")
      .select("cancel_requested")
      .where("id", "=", id)
      .executeTakeFirst();
    return r?.cancel_requested === 1;
  }

  /**
   * Cancels a queued job at once (with its events); flags a running one for its
   * worker. Returns the job as it stands afterwards.
   */
  async requestCancel(id: string): Promise<JobRow | undefined> {
    const now = nowIso();
    const cancelledNow = await this.transition(
      id,
      { status: ["queued", "paused"] },
      { status: "cancelled", finished_at: now, cancel_requested: 1 },
      [{ type: "training.cancelled", step: null }, { type: "end" }],
    );
    if (!cancelledNow) {
      await this.db
        .updateTable("jobs")
        .set({ cancel_requested: 1 })
        .where("id", "=", id)
        .where("status", "=", "running")
        .execute();
    }
    return this.get(id);
  }

  /**
   * Pauses a queued job at once (with its event); flags a running one for its
   * worker, which checkpoints and stops it (job-transitions.ts paused). Returns the job afterwards.
   */
  async requestPause(id: string): Promise<JobRow | undefined> {
    const pausedNow = await this.transition(id, { status: ["queued"] }, { status: "paused" }, [
      { type: "training.paused", step: null },
    ]);
    if (!pausedNow)
      await this.db
        .updateTable("jobs")
        .set({ pause_requested: 1 })
        .where("id", "=", id)
        .where("status", "=", "running")
        .execute();
    return this.get(id);
  }

  /** Queues a paused job again (it resumes from its resume_from checkpoint); false when it was not paused. */
  async resume(id: string): Promise<boolean> {
    const patch = { status: "queued" as const, pause_requested: 0, paused_reason: null };
    return this.transition(id, { status: ["paused"] }, patch, [{ type: "training.resumed" }]);
  }

  async isPauseRequested(id: string): Promise<boolean> {
    const r = await this.db
      .selectFrom("jobs")
      .select("pause_requested")
      .where("id", "=", id)
      .executeTakeFirst();
    return r?.pause_requested === 1;
  }

  /**
   * Updates a job (when it still has one of `guard.status` and is held by
   * `guard.owner`, where given) and appends events in one
   * transaction. Returns false when the guard matched no row.
   */
  async transition(
    id: string,
    guard: { status?: JobRow["status"][]; owner?: string },
    patch: Partial<JobRow>,
    events: NewJobEvent[],
  ): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        const changed = await this.db.transaction().execute(async (trx) => {
          let q = trx.updateTable("jobs").set(patch).where("id", "=", id);
          if (guard.status) q = q.where("status", "in", guard.status);
          if (guard.owner !== undefined) q = q.where("lease_owner", "=", guard.owner);
          const r = await q.executeTakeFirst();
          if (Number(r.numUpdatedRows) !== 1) return false;
          await this.appendIn(trx, id, events);
          return true;
        });
        if (changed && events.length > 0) this.onEventsAppended(id);
        return changed;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= 5) throw error;
      }
    }
  }

  /** Appends events in order (retrying when a concurrent writer took the same seq). */
  async appendEvents(jobId: string, events: NewJobEvent[]): Promise<void> {
    await this.withEvents(jobId, (trx) => this.appendIn(trx, jobId, events));
  }

  /**
   * A saved checkpoint: its artifact, the job's resume point and its
   * checkpoint.saved event in one transaction, so a process killed midway
   * leaves all three or none; a job never resumes from a checkpoint its event
   * log does not show.
   */
  async recordCheckpoint(row: ArtifactsTable): Promise<void> {
    const event: NewJobEvent = { type: "checkpoint.saved", step: row.step, artifact: toArtifact(row) };
    await this.withEvents(row.job_id, async (trx) => {
      await this.upsertArtifact(trx, row);
      // Fresh progress: crashes before it no longer count towards the restart limit.
      await trx
        .updateTable("jobs")
        .set({ resume_from: row.dir, crash_streak: 0 })
        .where("id", "=", row.job_id)
        .execute();
      await this.appendIn(trx, row.job_id, [event]);
    });
  }

  /** Runs `write` in a transaction that appends events, retrying when a concurrent append took the same seq. */
  private async withEvents(
    jobId: string,
    write: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.db.transaction().execute(write);
        this.onEventsAppended(jobId);
        return;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= 5) throw error;
      }
    }
  }

  private async appendIn(trx: Transaction<Database>, jobId: string, events: NewJobEvent[]): Promise<void> {
    if (events.length === 0) return;
    const last = await trx
      .selectFrom("job_events")
      .select((eb) => eb.fn.max("seq").as("seq"))
      .where("job_id", "=", jobId)
      .executeTakeFirst();
    let seq = Number(last?.seq ?? 0);
    const timestamp = nowIso();
    const rows = events.map((event) => ({
      job_id: jobId,
      seq: ++seq,
      type: event.type,
      payload: JSON.stringify({ ...event, jobId, timestamp }),
      created_at: timestamp,
    }));
    await trx.insertInto("job_events").values(rows).execute();
    if (this.kind === "postgres") await sql`select pg_notify('svc_job_events', ${jobId})`.execute(trx);
  }

  async eventsAfter(jobId: string, afterSeq: number): Promise<StoredJobEvent[]> {
    const rows = await this.db
      .selectFrom("job_events")
      .select(["seq", "type", "payload"])
      .where("job_id", "=", jobId)
      .where("seq", ">", afterSeq)
      .orderBy("seq")
      .execute();
    return rows.map(storedEvent);
  }

  /** At most `limit` events after `afterSeq`, in order: one page of a replay. */
  async eventsPage(jobId: string, afterSeq: number, limit: number): Promise<StoredJobEvent[]> {
    const rows = await this.db
      .selectFrom("job_events")
      .select(["seq", "type", "payload"])
      .where("job_id", "=", jobId)
      .where("seq", ">", afterSeq)
      .orderBy("seq")
      .limit(limit)
      .execute();
    return rows.map(storedEvent);
  }

  /** The job's training.started events (one per run): the resume markers a paged replay filters by. */
  async runStarts(jobId: string): Promise<StoredJobEvent[]> {
    const rows = await this.db
      .selectFrom("job_events")
      .select(["seq", "type", "payload"])
      .where("job_id", "=", jobId)
      .where("type", "=", "training.started")
      .orderBy("seq")
      .execute();
    return rows.map(storedEvent);
  }

  async addArtifact(row: ArtifactsTable): Promise<Artifact> {
    await this.upsertArtifact(this.db, row);
    return toArtifact(row);
  }

  private async upsertArtifact(db: Kysely<Database>, row: ArtifactsTable): Promise<void> {
    await db
      .insertInto("artifacts")
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(["job_id", "name"])
          .doUpdateSet({ step: row.step, dir: row.dir, files: row.files, created_at: row.created_at }),
      )
      .execute();
  }

  async artifacts(jobId: string): Promise<ArtifactsTable[]> {
    return this.db
      .selectFrom("artifacts")
      .selectAll()
      .where("job_id", "=", jobId)
      .orderBy("step")
      .orderBy("name")
      .execute();
  }

  async artifact(jobId: string, name: string): Promise<ArtifactsTable | undefined> {
    return this.db
      .selectFrom("artifacts")
      .selectAll()
      .where("job_id", "=", jobId)
      .where("name", "=", name)
      .executeTakeFirst();
  }

  async latestCheckpoint(jobId: string): Promise<ArtifactsTable | undefined> {
    return this.db
      .selectFrom("artifacts")
      .selectAll()
      .where("job_id", "=", jobId)
      .where("kind", "=", "checkpoint")
      .orderBy("step", "desc")
      .limit(1)
      .executeTakeFirst();
  }

  /** Whether the job has an event of this type (in any run). */
  async hasEvent(jobId: string, type: JobEventType): Promise<boolean> {
    const row = await this.db
      .selectFrom("job_events")
      .select("seq")
      .where("job_id", "=", jobId)
      .where("type", "=", type)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }
}
