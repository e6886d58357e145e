// The changes a worker makes to a job it holds: each is one conditional
// transition (status running, lease ours) with the events that go with it, so
// a worker that lost its lease changes nothing. Also records the adapter
// folders a training process wrote as artifact rows, and brings the job's
// TensorBoard event file artifact (worker/tensorboard-log.ts) up to date at
// each checkpoint and before the job settles, so its listing matches the file.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Artifact } from "@svc/wire";
import type { DataDir } from "../data-dir.js";
import type { ArtifactsTable } from "../db/schema.js";
import { nowIso } from "../ids.js";
import { type JobRow, toArtifact } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import type { TrainingProcessMessage } from "./training-protocol.js";

type Result = Extract<TrainingProcessMessage, { type: "result" }>;

export class JobTransitions {
  constructor(
    private readonly store: Store,
    private readonly dataDir: DataDir,
    private readonly owner: string,
    /** The row of a running job's TensorBoard event file as it is now (null: none yet). */
    private readonly eventFileOf: (jobId: string) => ArtifactsTable | null = () => null,
  ) {}

  private held() {
    return { status: ["running" as const], owner: this.owner };
  }

  async fail(row: JobRow, error: string, step: number | null): Promise<unknown> {
    await this.recordEventFile(row);
    return this.store.jobs.transition(
      row.id,
      this.held(),
      { status: "failed", error, finished_at: nowIso(), lease_owner: null, lease_expires_at: null },
      [{ type: "training.failed", error, step }, { type: "end" }],
    );
  }

  /** Back to the queue, to resume from `checkpoint` (a data-dir path) or from the start. */
  async requeue(row: JobRow, checkpoint: string | null): Promise<void> {
    await this.recordEventFile(row);
    await this.store.jobs.transition(
      row.id,
      this.held(),
      { status: "queued", lease_owner: null, lease_expires_at: null, resume_from: checkpoint },
      [],
    );
  }

  /** A paused job: it waits, not claimable, to resume from `checkpoint` (POST /v1/jobs/:id/resume). */
  async paused(row: JobRow, checkpoint: string | null, step: number | null): Promise<void> {
    // A cancel that came while the job was pausing wins.
    if (await this.store.jobs.isCancelRequested(row.id)) return this.cancelled(row, step);
    await this.recordEventFile(row);
    // Set when svc paused the job itself (its trainer's scorer is gone: worker/reward-scoring.ts).
    const reason = (await this.store.jobs.get(row.id))?.paused_reason ?? null;
    await this.store.jobs.transition(
      row.id,
      this.held(),
      {
        status: "paused",
        lease_owner: null,
        lease_expires_at: null,
        resume_from: checkpoint,
        pause_requested: 0,
      },
      [{ type: "training.paused", step, ...(reason ? { reason } : {}) }],
    );
  }

  async cancelled(row: JobRow, step: number | null): Promise<void> {
    await this.recordEventFile(row);
    await this.store.jobs.transition(
      row.id,
      this.held(),
      { status: "cancelled", finished_at: nowIso(), lease_owner: null, lease_expires_at: null },
      [{ type: "training.cancelled", step }, { type: "end" }],
    );
  }

  /** Records a checkpoint folder (artifact, resume point and event in one transaction); returns its data-dir path. */
  async checkpoint(row: JobRow, step: number, dir: string): Promise<string> {
    const artifact = this.artifactRow(row.id, "checkpoint", step, dir);
    await this.store.jobs.recordCheckpoint(artifact);
    await this.recordEventFile(row);
    return artifact.dir;
  }

  /** Completes the job with its final adapter (none for a dry run). */
  async completed(row: JobRow, message: Result): Promise<void> {
    const jobs = this.store.jobs;
    const result = message.result;
    const artifacts: Artifact[] = [];
    if (result) {
      artifacts.push(
        ...(await jobs.artifacts(row.id)).filter((a) => a.kind === "checkpoint").map(toArtifact),
      );
      artifacts.push(
        await jobs.addArtifact(this.artifactRow(row.id, "final", result.steps, result.adapterDir)),
      );
    }
    const eventFile = await this.recordEventFile(row);
    if (eventFile) artifacts.push(eventFile);
    await jobs.transition(
      row.id,
      this.held(),
      { status: "completed", finished_at: nowIso(), lease_owner: null, lease_expires_at: null },
      [
        {
          type: "training.completed",
          artifacts,
          metrics: {
            steps: result?.steps ?? 0,
            finalLoss: result?.finalLoss ?? null,
            evalLoss: result?.evalLoss ?? null,
            trainSeconds: message.trainSeconds,
          },
        },
        { type: "end" },
      ],
    );
  }

  /** Stores the job's TensorBoard event file artifact as the file is now; a failure only logs. */
  private async recordEventFile(row: JobRow): Promise<Artifact | null> {
    const artifact = this.eventFileOf(row.id);
    if (!artifact) return null;
    try {
      return await this.store.jobs.addArtifact(artifact);
    } catch (error) {
      console.error(`svc worker: job ${row.id}: recording its TensorBoard event file failed:`, error);
      return null;
    }
  }

  /** The artifact row of an adapter folder the training process wrote. */
  private artifactRow(
    jobId: string,
    kind: "final" | "checkpoint",
    step: number,
    dir: string,
  ): ArtifactsTable {
    const files = readdirSync(dir)
      .filter((name) => statSync(join(dir, name)).isFile())
      .sort()
      .map((name) => ({ path: name, bytes: statSync(join(dir, name)).size }));
    return {
      job_id: jobId,
      name: kind === "final" ? "final" : `checkpoint-${step}`,
      kind,
      step,
      dir: this.dataDir.rel(dir),
      files: JSON.stringify(files),
      created_at: nowIso(),
    };
  }
}
