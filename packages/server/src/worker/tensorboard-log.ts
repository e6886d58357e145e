// A job's TensorBoard event file (docs/tensorboard.md): every job that trains
// writes its training.log numbers as scalars to
// jobs/<id>/tensorboard/events.out.tfevents.<unix seconds>.<host>, appended as
// the events are stored, and recorded as the job's "tensorboard" artifact.
//
// The file shows each step once, as the replayed event log does
// (events/superseded-steps.ts): whenever a training process starts, the file
// is rewritten from the stored event log, keeping only what the new run does
// not train again. A run resumed from the checkpoint at step N supersedes the
// earlier records past N; a run from the first step (a restart before any
// checkpoint) supersedes them all. So the file never goes back in steps, and
// any reader (TensorBoard, tbparse, a notebook) sees one clean curve; a torn
// last record from a killed process is dropped by the same rewrite.
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import type { DataDir } from "../data-dir.js";
import type { ArtifactsTable } from "../db/schema.js";
import { nowIso } from "../ids.js";
import type { NewJobEvent, StoredJobEvent } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import {
  EVENT_FILE_PREFIX,
  eventFileName,
  fileVersionRecord,
  type Scalar,
  scalarsRecord,
} from "../tensorboard/event-file.js";

export const TENSORBOARD_ARTIFACT = "tensorboard";

/**
 * The training.log fields written as scalars, with their TensorBoard tags
 * (null values are left out). A DPO job's rewards are nested fields
 * ("rewards.margin"), tagged as TRL tags them; so are a GRPO job's figures
 * ("grpo.reward"), with each grader's mean as rewards/<name>/mean (scalarsOf).
 */
export const SCALAR_TAGS: readonly (readonly [field: string, tag: string])[] = [
  ["loss", "train/loss"],
  ["learningRate", "train/learning_rate"],
  ["tokensPerSecond", "train/tokens_per_second"],
  ["epoch", "train/epoch"],
  ["evalLoss", "eval/loss"],
  ["evalTokenAccuracy", "eval/token_accuracy"],
  ["evalExactMatch", "eval/exact_match"],
  ["rewards.chosenReward", "rewards/chosen"],
  ["rewards.rejectedReward", "rewards/rejected"],
  ["rewards.margin", "rewards/margins"],
  ["rewards.accuracy", "rewards/accuracies"],
  ["evalRewards.chosenReward", "eval/rewards/chosen"],
  ["evalRewards.rejectedReward", "eval/rewards/rejected"],
  ["evalRewards.margin", "eval/rewards/margins"],
  ["evalRewards.accuracy", "eval/rewards/accuracies"],
  ["grpo.reward", "reward"],
  ["grpo.rewardStd", "reward_std"],
  ["grpo.kl", "kl"],
  ["grpo.completionLength", "completions/mean_length"],
  ["grpo.zeroAdvantageFraction", "frac_reward_zero_std"],
  ["grpo.clipFraction", "clip_ratio/region_mean"],
];

/** One training.log frame as an event of the file. */
export interface ScalarRecord {
  wallTime: number;
  step: number;
  scalars: Scalar[];
}

/** The scalars of a training.log payload (numbers only; null, absent and non-finite fields are left out). */
export function scalarsOf(payload: Record<string, unknown>): Scalar[] {
  const scalars: Scalar[] = [];
  for (const [field, tag] of SCALAR_TAGS) {
    const value = field
      .split(".")
      .reduce<unknown>(
        (v, key) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[key] : undefined),
        payload,
      );
    if (typeof value === "number" && Number.isFinite(value)) scalars.push({ tag, value });
  }
  // a GRPO job's per-grader means, keyed by the graders' names (TRL: rewards/<reward function>/mean)
  const perGrader = (payload.grpo as { rewards?: Record<string, unknown> } | undefined)?.rewards;
  for (const [name, value] of Object.entries(perGrader ?? {}))
    if (typeof value === "number" && Number.isFinite(value))
      scalars.push({ tag: `rewards/${name}/mean`, value });
  return scalars;
}

/**
 * The records a job's stored event log leaves after superseding: each
 * training.started begins a run at its resumedFromStep (0 when absent: a run
 * from the first step), and drops the earlier records past that step.
 */
export function scalarHistory(events: StoredJobEvent[]): ScalarRecord[] {
  let records: ScalarRecord[] = [];
  for (const event of events) {
    if (event.type !== "training.started" && event.type !== "training.log") continue;
    const payload = JSON.parse(event.data) as Record<string, unknown>;
    if (event.type === "training.started") {
      const from = typeof payload.resumedFromStep === "number" ? payload.resumedFromStep : 0;
      records = records.filter((r) => r.step <= from);
      continue;
    }
    const scalars = scalarsOf(payload);
    if (typeof payload.step !== "number" || scalars.length === 0) continue;
    const wallTime = Date.parse(String(payload.timestamp)) / 1000;
    records.push({ wallTime: Number.isFinite(wallTime) ? wallTime : 0, step: payload.step, scalars });
  }
  return records;
}

/** The event file of one job, kept by the worker that runs it. */
export class JobTensorBoardLog {
  private readonly dir: string;
  /** The file's name once it exists. */
  private name: string | null = null;
  private lastStep = 0;
  /** Set when a write failed: the rest of this run is not written (the next run's rewrite repairs the file). */
  private failed = false;

  constructor(
    private readonly store: Store,
    private readonly dataDir: DataDir,
    private readonly jobId: string,
  ) {
    this.dir = join(dataDir.jobOutputPath(jobId), "tensorboard");
  }

  /** Follows events just stored for the job: a run's start rewrites the file, a training.log appends to it. */
  async record(events: NewJobEvent[]): Promise<void> {
    for (const event of events) {
      try {
        if (event.type === "training.started") await this.rewrite();
        else if (event.type === "training.log" && !this.failed) await this.append(event);
      } catch (error) {
        this.failed = true;
        console.error(
          `svc worker: job ${this.jobId}: writing its TensorBoard event file failed:`,
          (error as Error).message,
        );
      }
    }
  }

  /** The artifact row of the file as it is now, or null while the job has none. */
  artifactRow(): ArtifactsTable | null {
    if (!this.name) return null;
    let bytes: number;
    try {
      bytes = statSync(this.dataDir.abs(join(this.dir, this.name))).size;
    } catch {
      return null;
    }
    return {
      job_id: this.jobId,
      name: TENSORBOARD_ARTIFACT,
      kind: "tensorboard",
      step: this.lastStep,
      dir: this.dir,
      files: JSON.stringify([{ path: this.name, bytes }]),
      created_at: nowIso(),
    };
  }

  /** Rewrites the file from the stored event log (see the top of this file). */
  private async rewrite(): Promise<void> {
    this.failed = false;
    const records = scalarHistory(await this.store.jobs.eventsAfter(this.jobId, 0));
    const existing = this.existingName();
    if (!existing && records.length === 0) return;
    const name = existing ?? eventFileName(Date.now() / 1000, hostname());
    const created = Number(name.slice(EVENT_FILE_PREFIX.length).split(".")[0]);
    const bytes = Buffer.concat([
      fileVersionRecord(Number.isFinite(created) ? created : Date.now() / 1000),
      ...records.map((r) => scalarsRecord(r.wallTime, r.step, r.scalars)),
    ]);
    this.dataDir.writeAtomic(join(this.dir, name), bytes);
    this.name = name;
    this.lastStep = records.at(-1)?.step ?? 0;
    await this.saveArtifact();
  }

  private async append(event: Extract<NewJobEvent, { type: "training.log" }>): Promise<void> {
    const scalars = scalarsOf(event as unknown as Record<string, unknown>);
    if (scalars.length === 0) return;
    const now = Date.now() / 1000;
    const record = scalarsRecord(now, event.step, scalars);
    this.lastStep = event.step;
    if (this.name) return appendFile(this.dataDir.abs(join(this.dir, this.name)), record);
    // The job's first frame: the file starts here, and is listed at once (a killed server leaves it listed).
    const name = eventFileName(now, hostname());
    this.dataDir.writeAtomic(join(this.dir, name), Buffer.concat([fileVersionRecord(now), record]));
    this.name = name;
    await this.saveArtifact();
  }

  /** The job's event file from an earlier run, if any (a temporary file a killed write left is removed). */
  private existingName(): string | null {
    const dir = this.dataDir.abs(this.dir);
    if (!existsSync(dir)) return null;
    const names = readdirSync(dir).filter((n) => n.startsWith(EVENT_FILE_PREFIX));
    for (const n of names.filter((n) => n.includes(".tmp-"))) rmSync(join(dir, n), { force: true });
    return names.filter((n) => !n.includes(".tmp-")).sort()[0] ?? null;
  }

  private async saveArtifact(): Promise<void> {
    const row = this.artifactRow();
    if (row) await this.store.jobs.addArtifact(row);
  }
}
