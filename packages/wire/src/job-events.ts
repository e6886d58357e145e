// Wire types of a job's event stream (GET /v1/jobs/:id/events, SSE event
// name = type): what training, checkpoints and the base model's download
// report, in the order a job makes them.
import type { Artifact, Iso8601 } from "./common.js";

interface JobEventBase {
  jobId: string;
  timestamp: Iso8601;
}

export interface TrainingStartedEvent extends JobEventBase {
  type: "training.started";
  totalSteps: number;
  baseModel: string;
  trainExamples: number;
  evalExamples: number;
  /**
   * Set when this run resumed from the checkpoint at this step (0: restarted
   * from the first step after an earlier run logged steps): the earlier
   * run's training.log frames past it are superseded by this run's.
   */
  resumedFromStep?: number;
  /** The job's attempt this run belongs to (1-based; absent from events recorded before attempts were counted). */
  attempt?: number;
  /** For an attempt after the first: why the attempt before it ended (the crash that restarted the job). */
  restartedAfter?: string;
  /** Rows of both sets cut to fit maxLength (absent from events recorded before truncation was reported). */
  truncatedRows?: number;
  /** Rows of both sets left out because nothing trained fits in maxLength. */
  droppedRows?: number;
  /** The first rows cut or dropped (at most ROW_NOTES_SHOWN), dropped ones first. */
  rowNotes?: TruncationRowNote[];
  /** What this run trains in, the job's precision resolved on its worker (absent from events before precisions). */
  precision?: "fp32" | "bf16";
  /** The format the run holds the frozen base weights in. */
  baseWeights?: "fp32" | "bf16" | "int8";
}

/** One row cut or dropped; `row` is 1-based in the dataset file the row came from. */
export interface TruncationRowNote {
  set: "train" | "eval";
  row: number;
  action: "truncated" | "dropped";
  reason?: string;
}

export const ROW_NOTES_SHOWN = 10;

export interface TrainingLogEvent extends JobEventBase {
  type: "training.log";
  step: number;
  loss: number | null;
  evalLoss: number | null;
  /**
   * Task metrics of the eval pass (docs/api.md#task-metrics), fractions in [0, 1]:
   * the share of the eval set's assistant tokens predicted exactly, and the share
   * of a fixed sample of eval rows whose greedy answer equals the reference.
   * null when not computed at this step; events recorded before they existed lack them.
   */
  evalTokenAccuracy: number | null;
  evalExactMatch: number | null;
  learningRate: number | null;
  epoch: number | null;
  tokensPerSecond: number | null;
  /** Tokens the step trained on, prompts and answers (OpenAI's trained tokens); absent before svc counted them. */
  trainedTokens?: number;
  /** SFT: the share of the step's answer tokens whose argmax is the target (train mean token accuracy). */
  tokenAccuracy?: number;
  /** The backend that trained the step; events recorded before backends existed lack it (the engine). */
  backend?: "engine" | "torch";
  /** The torch backend's device: "cpu", "cuda", or "cuda x4" for four data-parallel processes. */
  device?: string;
  /** The torch backend's peak memory so far: GPU memory allocated on CUDA, the peak RSS on the CPU. */
  memoryBytes?: number;
  /** Method "dpo": the step's preference figures, means over its pairs (docs/post-training.md#charts). */
  rewards?: PreferenceFigures;
  /** Method "dpo": the same on the eval set (with its loss, also in evalLoss) when an eval ran; else null. */
  evalRewards?: (PreferenceFigures & { loss: number }) | null;
  /** Method "grpo": the step's reward figures and a few sampled completions (docs/post-training.md#grpo). */
  grpo?: GrpoFigures;
  /** Method "grpo" with an eval set: the eval's reward figures when an eval ran at this step; else null. */
  evalGrpo?: GrpoEvalFigures | null;
}

/** A GRPO eval's figures (the engine's GrpoEvalMetrics): means over every completion sampled for the eval set. */
export interface GrpoEvalFigures {
  reward: number;
  /** Each reward's own mean, by name. */
  rewards: Record<string, number>;
  completionLength: number;
}

/** A GRPO step's figures (the engine's GrpoMetrics) and where its time went. */
export interface GrpoFigures {
  /** Mean combined reward of the step's completions, and the mean of its groups' standard deviations. */
  reward: number;
  rewardStd: number;
  /** Each grader's own mean reward, by name. */
  rewards: Record<string, number>;
  /** Mean k3 KL to the reference over the trained tokens; null when beta is 0 (no reference pass). */
  kl: number | null;
  completionLength: number;
  /** Share of groups whose completions all scored the same (they train nothing). */
  zeroAdvantageFraction: number;
  clipFraction: number;
  samples: {
    rowNumber: number;
    completion: string;
    rewards: Record<string, number>;
    reward: number;
    advantage: number;
  }[];
  /** Seconds spent sampling, scoring and updating. */
  seconds?: { generation: number; scoring: number; update: number };
}

/**
 * A DPO step's figures: the implicit rewards β·(log πθ − log πref) of the
 * chosen and rejected answers (SimPO: β/|y|·log πθ), their margin, and the
 * share of pairs whose chosen reward is the larger (a tie counts half).
 */
export interface PreferenceFigures {
  chosenReward: number;
  rejectedReward: number;
  margin: number;
  accuracy: number;
}

export interface CheckpointSavedEvent extends JobEventBase {
  type: "checkpoint.saved";
  step: number;
  artifact: Artifact;
}

export interface TrainingCompletedEvent extends JobEventBase {
  type: "training.completed";
  artifacts: Artifact[];
  metrics: { steps: number; finalLoss: number | null; evalLoss: number | null; trainSeconds: number };
}

export interface TrainingFailedEvent extends JobEventBase {
  type: "training.failed";
  error: string;
  step: number | null;
}

export interface TrainingCancelledEvent extends JobEventBase {
  type: "training.cancelled";
  step: number | null;
}

/** The job was paused (POST /v1/jobs/:id/pause): `step` is where it stopped (its checkpoint), null when it had not started. */
export interface TrainingPausedEvent extends JobEventBase {
  type: "training.paused";
  step: number | null;
  /** Set when svc paused it itself: "scorer_gone" (Job.pausedReason). */
  reason?: string;
}

/** A paused job was resumed: it is queued again, to go on from its latest checkpoint. */
export interface TrainingResumedEvent extends JobEventBase {
  type: "training.resumed";
}

/** A file of a Hub download: bytes on disk so far (a resumed file starts above 0) and its size. */
export interface DownloadFileProgress {
  name: string;
  bytesDone: number;
  bytesTotal: number;
}

/** A Hub model or dataset being downloaded for the job, before training.started (throttled, at most about 4 a second). */
export interface DownloadProgressEvent extends JobEventBase {
  type: "download.progress";
  kind: "model" | "dataset";
  /** The Hub id, e.g. "Qwen/Qwen3-0.6B". */
  repo: string;
  /** The commit sha being downloaded. */
  revision: string;
  files: DownloadFileProgress[];
  bytesDone: number;
  bytesTotal: number;
}

/** The Hub model or dataset is on disk; `fromCache` when nothing had to be fetched. */
export interface DownloadCompletedEvent extends JobEventBase {
  type: "download.completed";
  kind: "model" | "dataset";
  repo: string;
  revision: string;
  bytes: number;
  fromCache: boolean;
}

export interface EndEvent extends JobEventBase {
  type: "end";
}

export type JobEvent =
  | DownloadProgressEvent
  | DownloadCompletedEvent
  | TrainingStartedEvent
  | TrainingLogEvent
  | CheckpointSavedEvent
  | TrainingCompletedEvent
  | TrainingFailedEvent
  | TrainingCancelledEvent
  | TrainingPausedEvent
  | TrainingResumedEvent
  | EndEvent;

export type JobEventType = JobEvent["type"];
