// One training process of a job run, from fork to exit: it is started with the
// job's input, and each of its reports (training-protocol.ts) becomes stored
// job events, a checkpoint artifact or the job's final status, strictly in order.
import type { DataDir } from "../data-dir.js";
import { type EngineExit, type EngineProcess, forkEngineProcess } from "../process/engine-process.js";
import type { JobRow, NewJobEvent } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import type { JobTransitions } from "./job-transitions.js";
import { awaitTrainerScores } from "./reward-scoring.js";
import type { JobTensorBoardLog } from "./tensorboard-log.js";
import type {
  TrainingProcessCommand,
  TrainingProcessInput,
  TrainingProcessMessage,
} from "./training-protocol.js";

/** What a training process run needs of the runner that claimed the job. */
export interface TrainingRunner {
  owner: string;
  store: Store;
  dataDir: DataDir;
  backend: "engine" | "torch";
  transitions: JobTransitions;
  /** Pauses a job running here (its pause flag is stored already): its trainer's scorer is gone. */
  pause: (jobId: string) => void;
}

export interface RunningJob {
  process: EngineProcess | null;
  /** Why the process was asked to stop: a user's cancel or pause, or this process shutting down. */
  stopReason: "cancel" | "pause" | "shutdown" | "lease_lost" | null;
  stopTimer: NodeJS.Timeout | null;
  /** Aborts the download of the job's Hub base model while one runs. */
  download: AbortController | null;
  /** The job's TensorBoard event file, written as its events are stored. */
  tensorboard: JobTensorBoardLog;
}

/** What one training process left behind, across restarts of the same job run. */
export interface RunProgress {
  lastStep: number | null;
  /** The data-dir path of the newest recorded checkpoint (the job's resume point). */
  latestCheckpoint: string | null;
  /** Its step. */
  latestCheckpointStep: number | null;
  /** The job's attempt the next training process belongs to, and why the one before it ended. */
  attempt: number;
  restartedAfter: string | null;
  /** Whether an earlier run of the job (an earlier attempt, or before a resume) logged steps. */
  earlierRunsLogged: boolean;
}

/**
 * Runs one training process to its end, storing what it reports. Resolves
 * "reported" when it settled the job (result or error), else how it exited.
 */
export async function runTrainingProcess(
  runner: TrainingRunner,
  row: JobRow,
  job: RunningJob,
  input: TrainingProcessInput,
  progress: RunProgress,
): Promise<"reported" | EngineExit> {
  const jobs = runner.store.jobs;
  const entry = runner.backend === "torch" ? "./torch-training-process.js" : "./training-process.js";
  const child = forkEngineProcess(new URL(entry, import.meta.url), `[job ${row.id}]`);
  job.process = child;
  console.log(
    `svc: ${runner.owner} runs job ${row.id} in process ${child.pid}${input.resumeFrom ? ` from ${runner.dataDir.rel(input.resumeFrom)}` : ""}`,
  );
  child.send({ type: "start", input } satisfies TrainingProcessCommand);
  if (job.stopReason) child.send({ type: "abort" } satisfies TrainingProcessCommand);

  let reported = false;
  // Steps after this one were logged by an earlier run; readers replace them
  // (events/superseded-steps.ts). A restart from step 0 after an earlier run
  // (this process's or an earlier attempt's) logged steps supersedes them all: 0.
  const resumedFromStep = input.resumeFrom
    ? progress.latestCheckpointStep
    : progress.lastStep !== null || progress.earlierRunsLogged
      ? 0
      : null;
  const events = async (list: NewJobEvent[]) => {
    await jobs.appendEvents(row.id, list);
    await job.tensorboard.record(list);
  };
  const handle = async (message: TrainingProcessMessage) => {
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
            truncatedRows: message.truncatedRows,
            droppedRows: message.droppedRows,
            rowNotes: message.rowNotes,
            ...(message.precision ? { precision: message.precision, baseWeights: message.baseWeights } : {}),
            ...(resumedFromStep !== null ? { resumedFromStep } : {}),
            attempt: progress.attempt,
            ...(progress.attempt > 1 && progress.restartedAfter
              ? { restartedAfter: progress.restartedAfter }
              : {}),
          },
        ]);
        return;
      case "progress": {
        const p = message.progress;
        progress.lastStep = p.step;
        await events([
          {
            type: "training.log",
            step: p.step,
            loss: p.loss ?? null,
            evalLoss: p.evalLoss ?? null,
            evalTokenAccuracy: p.evalTokenAccuracy ?? null,
            evalExactMatch: p.evalExactMatch ?? null,
            learningRate: p.learningRate ?? null,
            epoch: p.epoch ?? null,
            tokensPerSecond: p.tokensPerSecond ?? null,
            ...(p.trainedTokens !== undefined ? { trainedTokens: p.trainedTokens } : {}),
            ...(p.tokenAccuracy !== undefined ? { tokenAccuracy: p.tokenAccuracy } : {}),
            ...(p.backend ? { backend: p.backend } : {}),
            ...(p.device ? { device: p.device } : {}),
            ...(p.memoryBytes !== undefined ? { memoryBytes: p.memoryBytes } : {}),
            ...(p.preference ? { rewards: p.preference, evalRewards: p.evalPreference ?? null } : {}),
            ...(p.grpo ? { grpo: { ...p.grpo, ...(p.timing ? { seconds: p.timing } : {}) } } : {}),
            ...(p.evalGrpo !== undefined ? { evalGrpo: p.evalGrpo } : {}),
          },
        ]);
        return;
      }
      case "checkpoint":
        progress.latestCheckpoint = await runner.transitions.checkpoint(row, message.step, message.dir);
        progress.latestCheckpointStep = message.step;
        return;
      case "error":
        reported = true;
        if (job.stopReason === "shutdown") return runner.transitions.requeue(row, progress.latestCheckpoint);
        if (job.stopReason === "cancel") return runner.transitions.cancelled(row, progress.lastStep);
        if (job.stopReason === "pause")
          return runner.transitions.paused(row, progress.latestCheckpoint, progress.lastStep);
        await runner.transitions.fail(row, message.message, message.step ?? progress.lastStep);
        return;
      case "result":
        reported = true;
        return settle(runner.transitions, row, job, message, progress);
    }
  };
  // Messages are handled strictly in order: each waits for the last. A score request waits for the
  // trainer, however long, beside them: its answer goes back to the process, not into the job's record.
  let chain = Promise.resolve();
  child.child.on("message", (message: TrainingProcessMessage) => {
    if (message.type === "score") {
      const wait = {
        store: runner.store,
        jobId: row.id,
        stopping: () => job.stopReason !== null,
        pause: () => runner.pause(row.id),
      };
      void awaitTrainerScores(wait, message)
        .then((reply) => reply && child.send(reply))
        .catch((error) => console.error(`svc worker: job ${row.id}: scoring step ${message.step}:`, error));
      return;
    }
    chain = chain
      .then(() => handle(message))
      .catch((error) => console.error(`svc worker: job ${row.id}:`, error));
  });
  const exit = await child.exited;
  await chain;
  job.process = null;
  return reported ? "reported" : exit;
}

/** Stores the final report of a training process. */
function settle(
  transitions: JobTransitions,
  row: JobRow,
  job: RunningJob,
  message: Extract<TrainingProcessMessage, { type: "result" }>,
  progress: RunProgress,
): Promise<void> {
  const result = message.result;
  if (result?.status === "cancelled" || (job.stopReason && !result)) {
    if (job.stopReason === "pause")
      return transitions.paused(row, progress.latestCheckpoint, result?.steps ?? progress.lastStep);
    // Stopped without a user's cancel (shutdown, or a signal to the process): resume later.
    if (job.stopReason !== "cancel") return transitions.requeue(row, progress.latestCheckpoint);
    return transitions.cancelled(row, result?.steps ?? progress.lastStep);
  }
  return transitions.completed(row, message);
}
