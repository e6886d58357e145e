// Claims queued jobs from the database and runs each in a training thread,
// turning the thread's reports into stored job events, artifacts and status
// changes. It renews its lease while a job runs, polls the job's cancel flag
// (set by any API process), and on shutdown aborts training so the engine
// writes a checkpoint and the job goes back to the queue to resume later.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { ALL_LORA_TARGETS, type LoraTarget, type TrainHyperparameters } from "@svc/engine";
import type { DataDir } from "../data-dir.js";
import type { ArtifactsTable } from "../db/schema.js";
import { nowIso, randomBase62 } from "../ids.js";
import type { ModelRegistry } from "../models/model-registry.js";
import { type JobRow, type NewJobEvent, toArtifact } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import type { Artifact, JobHyperparameters } from "../wire.js";
import type {
  TrainingThreadCommand,
  TrainingThreadInput,
  TrainingThreadMessage,
} from "./training-protocol.js";

export interface JobRunnerOptions {
  concurrency: number;
  leaseMs: number;
  pollMs: number;
}

export function engineHyperparameters(hp: JobHyperparameters): TrainHyperparameters {
  const { lora, ...rest } = hp;
  return {
    ...rest,
    ...(lora.maxLength !== undefined ? { maxLength: lora.maxLength } : {}),
    lora: {
      r: lora.r,
      alpha: lora.alpha,
      targetModules: (lora.targetModules as LoraTarget[] | undefined) ?? [...ALL_LORA_TARGETS],
    },
  };
}

interface RunningJob {
  thread: Worker;
  /** Why the thread was asked to stop: a user's cancel or this process shutting down. */
  stopReason: "cancel" | "shutdown" | "lease_lost" | null;
}

export class JobRunner {
  readonly owner = `worker-${randomBase62(10)}`;
  private readonly running = new Map<string, RunningJob>();
  private readonly finished = new Set<Promise<void>>();
  private stopped = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly dataDir: DataDir,
    private readonly models: ModelRegistry,
    private readonly options: JobRunnerOptions,
  ) {}

  start(): void {
    this.loop = this.claimLoop();
  }

  /** Called when a job was queued, so it starts without waiting for the next poll. */
  nudge(): void {
    this.wake?.();
  }

  /** Aborts a job running here after its cancel flag was set. */
  cancel(jobId: string): void {
    const job = this.running.get(jobId);
    if (job && !job.stopReason) this.stopThread(job, "cancel");
  }

  /** Stops claiming, aborts running jobs (they checkpoint and are re-queued) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    for (const job of this.running.values()) this.stopThread(job, "shutdown");
    await this.loop;
    await Promise.all([...this.finished]);
  }

  private stopThread(job: RunningJob, reason: NonNullable<RunningJob["stopReason"]>): void {
    job.stopReason = reason;
    job.thread.postMessage({ type: "abort" } satisfies TrainingThreadCommand);
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopped) {
      let claimed: JobRow | undefined;
      if (this.running.size < this.options.concurrency) {
        try {
          claimed = await this.store.jobs.claimNext(this.owner, this.options.leaseMs);
        } catch (error) {
          console.error("svc worker: claiming a job failed:", (error as Error).message);
        }
      }
      if (claimed && this.stopped) {
        // A claim that was in flight when stop() began: hand the job straight back
        // so the next server or worker starts it, instead of training it here.
        await this.requeue(claimed, claimed.resume_from);
        break;
      }
      if (claimed) {
        const done = this.run(claimed).catch((error) =>
          console.error(`svc worker: job ${claimed.id} crashed:`, error),
        );
        this.finished.add(done);
        done.finally(() => {
          this.finished.delete(done);
          this.wake?.();
        });
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** The artifact row of an adapter folder the training thread wrote. */
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

  private async run(row: JobRow): Promise<void> {
    const jobs = this.store.jobs;
    const model = this.models.get(row.base_model);
    const dataset = await this.store.datasets.get(row.dataset_id);
    const evalDataset = row.eval_dataset_id ? await this.store.datasets.get(row.eval_dataset_id) : undefined;
    const fail = (error: string, step: number | null) =>
      jobs.transition(
        row.id,
        { status: ["running"], owner: this.owner },
        { status: "failed", error, finished_at: nowIso(), lease_owner: null, lease_expires_at: null },
        [{ type: "training.failed", error, step }, { type: "end" }],
      );
    if (!model) return void (await fail(`base model ${row.base_model} is not served by this worker`, null));
    if (!dataset) return void (await fail(`dataset ${row.dataset_id} no longer exists`, null));

    const input: TrainingThreadInput = {
      modelDir: model.dir,
      trainPath: this.dataDir.abs(dataset.path),
      evalPath: evalDataset ? this.dataDir.abs(evalDataset.path) : null,
      evalFraction: row.eval_fraction,
      hyperparameters: engineHyperparameters(JSON.parse(row.hyperparameters) as JobHyperparameters),
      outputDir: this.dataDir.abs(this.dataDir.jobOutputPath(row.id)),
      resumeFrom: row.resume_from ? this.dataDir.abs(row.resume_from) : null,
      dryRun: row.dry_run === 1,
    };
    console.log(`svc: ${this.owner} runs job ${row.id}${row.resume_from ? ` from ${row.resume_from}` : ""}`);
    const thread = new Worker(new URL("./training-thread.js", import.meta.url), { workerData: input });
    const job: RunningJob = { thread, stopReason: null };
    this.running.set(row.id, job);

    const heartbeat = setInterval(
      async () => {
        try {
          if (!(await jobs.heartbeat(row.id, this.owner, this.options.leaseMs))) {
            if (!job.stopReason) this.stopThread(job, "lease_lost");
          } else if (!job.stopReason && (await jobs.isCancelRequested(row.id))) {
            this.stopThread(job, "cancel");
          }
        } catch (error) {
          console.error(`svc worker: heartbeat of job ${row.id} failed:`, (error as Error).message);
        }
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );

    let lastStep: number | null = null;
    let latestCheckpoint: string | null = row.resume_from;
    const events = (list: NewJobEvent[]) => jobs.appendEvents(row.id, list);
    // Thread messages are handled strictly in order: each waits for the last.
    let chain = Promise.resolve();
    const finished = new Promise<void>((resolve) => {
      const handle = async (message: TrainingThreadMessage) => {
        if (job.stopReason === "lease_lost") return;
        switch (message.type) {
          case "started":
            await events([
              {
                type: "training.started",
                baseModel: row.base_model,
                totalSteps: message.totalSteps,
                trainExamples: message.trainExamples,
                evalExamples: message.evalExamples,
              },
            ]);
            return;
          case "progress": {
            const p = message.progress;
            lastStep = p.step;
            await events([
              {
                type: "training.log",
                step: p.step,
                loss: p.loss ?? null,
                evalLoss: p.evalLoss ?? null,
                learningRate: p.learningRate ?? null,
                epoch: p.epoch ?? null,
                tokensPerSecond: p.tokensPerSecond ?? null,
              },
            ]);
            return;
          }
          case "checkpoint": {
            const checkpoint = this.artifactRow(row.id, "checkpoint", message.step, message.dir);
            await jobs.recordCheckpoint(checkpoint);
            latestCheckpoint = checkpoint.dir;
            return;
          }
          case "error":
            if (job.stopReason === "shutdown") return this.requeue(row, latestCheckpoint);
            if (job.stopReason === "cancel") return this.cancelled(row, lastStep);
            await fail(message.message, message.step ?? lastStep);
            return;
          case "result": {
            const result = message.result;
            if (result?.status === "cancelled" || (job.stopReason && !result)) {
              if (job.stopReason === "shutdown") return this.requeue(row, latestCheckpoint);
              return this.cancelled(row, result?.steps ?? lastStep);
            }
            const artifacts: Artifact[] = [];
            if (result) {
              artifacts.push(
                ...(await jobs.artifacts(row.id)).filter((a) => a.kind === "checkpoint").map(toArtifact),
              );
              artifacts.push(
                await jobs.addArtifact(this.artifactRow(row.id, "final", result.steps, result.adapterDir)),
              );
            }
            await jobs.transition(
              row.id,
              { status: ["running"], owner: this.owner },
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
        }
      };
      thread.on("message", (message: TrainingThreadMessage) => {
        chain = chain
          .then(() => handle(message))
          .catch((error) => console.error(`svc worker: job ${row.id}:`, error));
      });
      thread.on("error", (error) => {
        chain = chain.then(() => handle({ type: "error", message: error.message, step: lastStep }));
      });
      thread.on("exit", () => {
        chain = chain.then(resolve);
      });
    });
    await finished;
    clearInterval(heartbeat);
    this.running.delete(row.id);
    // A thread that exited without a final report leaves the job running: fail it.
    const after = await jobs.get(row.id);
    if (after?.status === "running" && after.lease_owner === this.owner) {
      if (job.stopReason === "shutdown") await this.requeue(row, latestCheckpoint);
      else await fail("the training thread stopped without reporting a result", lastStep);
    }
  }

  private async requeue(row: JobRow, checkpoint: string | null): Promise<void> {
    await this.store.jobs.transition(
      row.id,
      { status: ["running"], owner: this.owner },
      { status: "queued", lease_owner: null, lease_expires_at: null, resume_from: checkpoint },
      [],
    );
  }

  private async cancelled(row: JobRow, step: number | null): Promise<void> {
    await this.store.jobs.transition(
      row.id,
      { status: ["running"], owner: this.owner },
      { status: "cancelled", finished_at: nowIso(), lease_owner: null, lease_expires_at: null },
      [{ type: "training.cancelled", step }, { type: "end" }],
    );
  }
}
