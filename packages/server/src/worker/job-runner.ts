// Claims queued jobs from the database and runs each in a training process
// (a child of this one), turning its reports into stored job events, artifacts
// and status changes. It renews its lease while a job runs, polls the job's
// cancel flag (set by any API process), and on shutdown aborts training so the
// engine writes a checkpoint and the job goes back to the queue to resume
// later. A training process that dies without a final report (a native crash,
// out of memory) is logged with its signal and restarted as the job's next
// attempt (crash-policy.ts): from the job's last checkpoint, or from step 0
// when it has none.
import type { DataDir } from "../data-dir.js";
import { engineHyperparameters, torchModelOf } from "../engine-hyperparameters.js";
import { parseHubName } from "../hub/index.js";
import type { ModelRegistry, RegisteredModel } from "../models/model-registry.js";
import { judgeModels } from "../routes/job-judges.js";
import { startAdapterDir } from "../routes/job-start-adapter.js";
import { JobRecoveryStore } from "../store/job-recovery-store.js";
import type { JobRow, StoredHyperparameters } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import { RunnerRecord } from "../store/worker-store.js";
import { downloadBaseModel } from "./base-model-download.js";
import { type CrashPolicy, crashFailure, crashVerdict } from "./crash-policy.js";
import { JobTransitions } from "./job-transitions.js";
import { runnerName } from "./runner-liveness.js";
import { JobTensorBoardLog } from "./tensorboard-log.js";
import type { TorchLaunch, TrainingProcessCommand, TrainingProcessInput } from "./training-protocol.js";
import {
  type RunningJob,
  type RunProgress,
  runTrainingProcess,
  type TrainingRunner,
} from "./training-run.js";

export interface JobRunnerOptions extends CrashPolicy {
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** How long a stopping training process may take to checkpoint before it is killed. */
  stopTimeoutMs: number;
  /** The backend this runner trains on (default: the engine); it claims that backend's jobs and "auto" ones. */
  backend?: "engine" | "torch";
  /** How the torch backend starts PyTorch (backend "torch"). */
  torch?: TorchLaunch;
}

export const JOB_RUNNER_DEFAULTS = {
  crashRestarts: 3,
  restartWithoutCheckpoint: true,
  stopTimeoutMs: 60_000,
} as const;

export class JobRunner {
  readonly owner = runnerName();
  private readonly running = new Map<string, RunningJob>();
  private readonly finished = new Set<Promise<void>>();
  private stopped = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private readonly jobs: JobTransitions;
  /** This runner's row in the workers table: its backend, device and free slots. */
  private readonly record: RunnerRecord;

  constructor(
    private readonly store: Store,
    private readonly dataDir: DataDir,
    private readonly models: ModelRegistry,
    private readonly options: JobRunnerOptions,
  ) {
    const device = options.backend === "torch" ? (options.torch?.device ?? "cpu") : "cpu";
    this.record = new RunnerRecord(store.db, this.owner, options.backend ?? "engine", device);
    this.jobs = new JobTransitions(
      store,
      dataDir,
      this.owner,
      (jobId) => this.running.get(jobId)?.tensorboard.artifactRow() ?? null,
    );
  }

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
    // A cancel overrides a pause under way: the job ends cancelled, not paused.
    if (job && (!job.stopReason || job.stopReason === "pause")) this.stopProcess(job, "cancel");
  }

  /** Checkpoints and stops a job running here after its pause flag was set; it waits as "paused". */
  pause(jobId: string): void {
    const job = this.running.get(jobId);
    if (job && !job.stopReason) this.stopProcess(job, "pause");
  }

  /** Stops claiming, aborts running jobs (they checkpoint and are re-queued) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    for (const job of this.running.values()) this.stopProcess(job, "shutdown");
    await this.loop;
    await Promise.all([...this.finished]);
    await this.record.gone().catch(() => {});
  }

  private get backend(): "engine" | "torch" {
    return this.options.backend ?? "engine";
  }

  /** "engine", or "torch (cuda, 4 processes)": what this runner trains on, for its log. */
  get backendName(): string {
    const torch = this.options.torch;
    if (this.backend !== "torch" || !torch) return this.backend;
    return `torch (${torch.device}${torch.processes > 1 ? `, ${torch.processes} processes` : ""})`;
  }

  /** Asks the training process to checkpoint and stop; kills it if it takes longer than stopTimeoutMs. */
  private stopProcess(job: RunningJob, reason: NonNullable<RunningJob["stopReason"]>): void {
    job.stopReason = reason;
    job.download?.abort();
    job.process?.send({ type: "abort" } satisfies TrainingProcessCommand);
    job.stopTimer ??= setTimeout(() => job.process?.kill("SIGKILL"), this.options.stopTimeoutMs);
    job.stopTimer.unref();
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopped) {
      let claimed: JobRow | undefined;
      // Announced while busy too: a runner whose slots are all taken is still alive.
      await this.record
        .poll(this.options.concurrency - this.running.size)
        .catch((error) =>
          console.error("svc worker: recording this runner failed:", (error as Error).message),
        );
      if (this.running.size < this.options.concurrency) {
        try {
          claimed = await this.store.jobs.claimNext(this.owner, this.options.leaseMs, this.record.claimant());
        } catch (error) {
          console.error("svc worker: claiming a job failed:", (error as Error).message);
        }
      }
      if (claimed && this.stopped) {
        // A claim that was in flight when stop() began: hand the job straight back
        // so the next server or worker starts it, instead of training it here.
        await this.jobs.requeue(claimed, claimed.resume_from);
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

  /**
   * Runs a claimed job. Its slot is taken before the first await, so the claim
   * loop (which goes on at once) never claims more jobs than `concurrency`.
   */
  private async run(row: JobRow): Promise<void> {
    const job: RunningJob = {
      process: null,
      stopReason: null,
      stopTimer: null,
      download: null,
      tensorboard: new JobTensorBoardLog(this.store, this.dataDir, row.id),
    };
    this.running.set(row.id, job);
    try {
      await this.train(row, job);
    } finally {
      if (job.stopTimer) clearTimeout(job.stopTimer);
      this.running.delete(row.id);
    }
  }

  private async train(row: JobRow, job: RunningJob): Promise<void> {
    const jobs = this.store.jobs;
    const model = this.models.isRegistered(row.base_model)
      ? this.models.get(row.base_model)
      : await this.hubBaseModel(row, job);
    if (model === null) return; // settled while downloading: failed, cancelled or requeued
    const dataset = await this.store.datasets.get(row.dataset_id);
    const evalDataset = row.eval_dataset_id ? await this.store.datasets.get(row.eval_dataset_id) : undefined;
    if (!model)
      return void (await this.jobs.fail(
        row,
        `base model ${row.base_model} is not served by this worker`,
        null,
      ));
    if (!dataset) return void (await this.jobs.fail(row, `dataset ${row.dataset_id} no longer exists`, null));

    const { startAdapter, ...hyperparameters } = JSON.parse(row.hyperparameters) as StoredHyperparameters;
    const startDir = startAdapter ? await startAdapterDir({ store: this.store }, startAdapter) : null;
    if (startAdapter && !startDir)
      return void (await this.jobs.fail(
        row,
        `the adapter this job starts from (job ${startAdapter.jobId}, ${startAdapter.kind === "final" ? "final" : `checkpoint ${startAdapter.step}`}) no longer exists`,
        null,
      ));
    // a score_model grader's judge runs in the training process, loaded from these folders
    const judges = hyperparameters.graders?.length
      ? await judgeModels(this.store, this.models, (path) => this.dataDir.abs(path), hyperparameters.graders)
      : [];
    if (typeof judges === "string") return void (await this.jobs.fail(row, judges, null));
    const input: TrainingProcessInput = {
      modelDir: model.dir,
      // A Hub model's adapter names its Hub id and commit (adapter_config.json), not the cache folder.
      ...(model.info.source === "hub"
        ? {
            baseModelName: parseHubName(row.base_model)?.repo,
            baseModelRevision: model.info.revision ?? undefined,
          }
        : {}),
      trainPath: this.dataDir.abs(dataset.path),
      evalPath: evalDataset ? this.dataDir.abs(evalDataset.path) : null,
      evalFraction: row.eval_fraction,
      hyperparameters: engineHyperparameters(hyperparameters),
      torchModel: torchModelOf(hyperparameters),
      outputDir: this.dataDir.abs(this.dataDir.jobOutputPath(row.id)),
      resumeFrom: null,
      ...(startDir ? { startAdapter: this.dataDir.abs(startDir) } : {}),
      ...(judges.length ? { judges } : {}),
      dryRun: row.dry_run === 1,
      ...(this.backend === "torch" && this.options.torch ? { torch: this.options.torch } : {}),
    };
    const heartbeat = this.startHeartbeat(row, job);

    const resumePoint = row.resume_from
      ? (await jobs.artifacts(row.id)).find((a) => a.kind === "checkpoint" && a.dir === row.resume_from)
      : undefined;
    const progress: RunProgress = {
      lastStep: null,
      latestCheckpoint: row.resume_from,
      latestCheckpointStep: resumePoint?.step ?? null,
      attempt: row.attempt,
      restartedAfter: row.attempt > 1 ? row.last_crash : null,
      earlierRunsLogged: await jobs.hasEvent(row.id, "training.log"),
    };
    try {
      for (;;) {
        const resumeFrom = progress.latestCheckpoint ? this.dataDir.abs(progress.latestCheckpoint) : null;
        // A stop asked for before a process started needs no process: it is settled below.
        const exit = job.stopReason
          ? null
          : await runTrainingProcess(this.asTrainingRunner(), row, job, { ...input, resumeFrom }, progress);
        if (exit === "reported" || job.stopReason === "lease_lost") break;
        if (job.stopReason === "shutdown") {
          await this.jobs.requeue(row, progress.latestCheckpoint);
          break;
        }
        if (job.stopReason === "cancel") {
          await this.jobs.cancelled(row, progress.lastStep);
          break;
        }
        if (job.stopReason === "pause") {
          await this.jobs.paused(row, progress.latestCheckpoint, progress.lastStep);
          break;
        }
        if (!exit) break;
        // The process died without a final report: a crash.
        if (!(await this.restartAfterCrash(row, exit.reason, progress))) break;
      }
    } finally {
      clearInterval(heartbeat);
    }
    // A run that ended without settling the job (an unexpected report) must not leave it running.
    const after = await jobs.get(row.id);
    if (after?.status === "running" && after.lease_owner === this.owner) {
      if (job.stopReason === "shutdown") await this.jobs.requeue(row, progress.latestCheckpoint);
      else
        await this.jobs.fail(
          row,
          "the training process stopped without reporting a result",
          progress.lastStep,
        );
    }
  }

  /**
   * After the job's training process crashed: makes the job its next attempt
   * and returns true to start it here again, or settles it (failed, or back to
   * the queue when this runner is stopping) and returns false.
   */
  private async restartAfterCrash(row: JobRow, reason: string, progress: RunProgress): Promise<boolean> {
    const at = progress.lastStep !== null ? ` after step ${progress.lastStep}` : "";
    const cause = `the training process ${reason}${at}`;
    console.error(`svc worker: job ${row.id}: ${cause}`);
    const held = await this.store.jobs.get(row.id);
    if (held?.status !== "running" || held.lease_owner !== this.owner) return false;
    const why = crashVerdict(this.options, {
      streak: held.crash_streak + 1,
      hasCheckpoint: progress.latestCheckpoint !== null,
      trainingStarted: true,
    });
    if (why !== null) {
      await this.jobs.fail(row, crashFailure(cause, why, held.attempt), progress.lastStep);
      return false;
    }
    const next = await new JobRecoveryStore(this.store.db).nextAttemptAfterCrash(row.id, this.owner, cause);
    if (!next) return false;
    progress.attempt = next.attempt;
    progress.restartedAfter = cause;
    if (this.stopped) {
      await this.jobs.requeue(row, progress.latestCheckpoint);
      return false;
    }
    console.error(
      `svc worker: job ${row.id}: restarting training ${progress.latestCheckpoint ? `from ${progress.latestCheckpoint}` : "from the first step (no checkpoint yet)"} as attempt ${next.attempt}`,
    );
    return true;
  }

  /** Renews the job's lease and notices a cancel, a third of the lease apart. */
  private startHeartbeat(row: JobRow, job: RunningJob): NodeJS.Timeout {
    return setInterval(
      async () => {
        try {
          if (!(await this.store.jobs.heartbeat(row.id, this.owner, this.options.leaseMs))) {
            if (!job.stopReason) this.stopProcess(job, "lease_lost");
          } else if (
            (!job.stopReason || job.stopReason === "pause") &&
            (await this.store.jobs.isCancelRequested(row.id))
          ) {
            this.stopProcess(job, "cancel");
          } else if (!job.stopReason && (await this.store.jobs.isPauseRequested(row.id))) {
            this.stopProcess(job, "pause");
          }
        } catch (error) {
          console.error(`svc worker: heartbeat of job ${row.id} failed:`, (error as Error).message);
        }
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
  }

  /**
   * A Hub base model's files, fetched with the job's download events
   * (base-model-download.ts), or undefined for a name that is no Hub id; null
   * when the job was settled meanwhile (the download failed, or was stopped).
   */
  private async hubBaseModel(row: JobRow, job: RunningJob): Promise<RegisteredModel | undefined | null> {
    if (!parseHubName(row.base_model)) return undefined;
    const heartbeat = this.startHeartbeat(row, job);
    job.download = new AbortController();
    if (job.stopReason) job.download.abort();
    try {
      return await downloadBaseModel(this.models, this.store.jobs, row, job.download.signal);
    } catch (error) {
      if (job.stopReason === "shutdown") await this.jobs.requeue(row, row.resume_from);
      else if (job.stopReason === "cancel") await this.jobs.cancelled(row, null);
      else if (job.stopReason === "pause") await this.jobs.paused(row, row.resume_from, null);
      else if (job.stopReason !== "lease_lost") await this.jobs.fail(row, (error as Error).message, null);
      return null;
    } finally {
      clearInterval(heartbeat);
      job.download = null;
    }
  }

  private asTrainingRunner(): TrainingRunner {
    return {
      owner: this.owner,
      store: this.store,
      dataDir: this.dataDir,
      backend: this.backend,
      transitions: this.jobs,
      pause: (jobId) => this.pause(jobId),
    };
  }
}
