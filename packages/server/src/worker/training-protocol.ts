// Messages between a job runner and its training process, and the training
// process's end of them.
import type { GrpoProgress, PreferenceProgress, TrainProgress, TrainResult } from "@svc/engine";
import type { ScoringItem, TorchModel, TruncationRowNote } from "@svc/wire";
import type { EngineJobHyperparameters } from "../engine-hyperparameters.js";

export interface TrainingProcessInput {
  modelDir: string;
  trainPath: string;
  evalPath: string | null;
  evalFraction: number | null;
  hyperparameters: EngineJobHyperparameters;
  outputDir: string;
  resumeFrom: string | null;
  /** The adapter folder whose weights start a job from an adapter (engine TrainOptions.startAdapter). */
  startAdapter?: string;
  /** Method "grpo": the models its score_model graders' judges run on (routes/job-judges.ts). */
  judges?: JudgeModel[];
  dryRun: boolean;
  /** A Hub base model's id and commit, written into the adapters' adapter_config.json. */
  baseModelName?: string;
  baseModelRevision?: string;
  /** The torch backend's model implementation (hyperparameters.torchModel; default "svc"). */
  torchModel?: TorchModel;
  /** Set for the torch backend's process (torch-training-process.ts): how it starts PyTorch. */
  torch?: TorchLaunch;
}

/** A judge's model as the training process loads it: a base model's folder, and an ft: model's adapter folder. */
export interface JudgeModel {
  /** The grader's `model`, as given. */
  model: string;
  modelDir: string;
  adapterDir: string | null;
}

/** How a torch worker runs its jobs (svc worker --backend torch). */
export interface TorchLaunch {
  /** The Python interpreter with torch (--python, SVC_PYTHON; default /usr/bin/python3). */
  python: string;
  device: "cpu" | "cuda";
  /** Processes per job, data parallel (--gpus N; 1 on the CPU unless set). */
  processes: number;
  /** Recompute each decoder layer's activations in the backward pass (--gradient-checkpointing). */
  gradientCheckpointing?: boolean;
  /** Pack each micro-batch's sequences into rows of up to maxLength tokens (--packing). */
  packing?: boolean;
  /** Shard the frozen base across the job's processes with FSDP (--fsdp; needs PyTorch 2.7 or later). */
  fsdp?: boolean;
}

/** What the torch backend adds to a step's figures (events: training.log). */
export interface BackendFigures {
  backend?: "engine" | "torch";
  /** "cpu", "cuda", or "cuda x4" for four data-parallel processes. */
  device?: string;
  /** Peak memory of the run so far: GPU memory allocated on CUDA, the process's peak RSS on the CPU. */
  memoryBytes?: number;
}

export type TrainingProcessMessage =
  | {
      type: "started";
      totalSteps: number;
      trainExamples: number;
      evalExamples: number;
      truncatedRows: number;
      droppedRows: number;
      rowNotes: TruncationRowNote[];
      /** What the run trains in (the job's precision resolved on this worker). */
      precision?: "fp32" | "bf16";
      baseWeights?: "fp32" | "bf16" | "int8";
    }
  | {
      type: "progress";
      progress: TrainProgress &
        BackendFigures &
        Partial<Pick<PreferenceProgress, "preference" | "evalPreference">> &
        Partial<Pick<GrpoProgress, "grpo" | "timing" | "evalGrpo">>;
    }
  | { type: "checkpoint"; step: number; dir: string }
  | ScoreRequest
  | { type: "result"; result: TrainResult | null; trainSeconds: number }
  | { type: "error"; message: string; step: number | null };

/** A GRPO step's completions for the trainer's rewards to score (worker/trainer-rewards.ts, reward-scoring.ts). */
export interface ScoreRequest {
  type: "score";
  id: number;
  step: number;
  rewardNames: string[];
  items: ScoringItem[];
}

/** The trainer's answer to a ScoreRequest: a list of rewards per item, or its error (it fails the step). */
export type ScoreReply =
  | { type: "scores"; id: number; rewards: number[][] }
  | { type: "scoreFailed"; id: number; message: string };

export type TrainingProcessCommand =
  | { type: "start"; input: TrainingProcessInput }
  | { type: "abort" }
  | ScoreReply;

/** In a training process: sends a message and resolves once it is handed to the IPC channel. */
export const postToRunner = (message: TrainingProcessMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send?.(message, undefined, {}, () => resolve())) resolve();
  });

/**
 * In a training process: the start command's input. `stop` runs on an abort
 * command and on SIGTERM (a service manager stopping the whole group), which
 * both checkpoint and stop.
 */
export function trainingInput(stop: () => void): Promise<TrainingProcessInput> {
  process.on("SIGTERM", stop);
  return new Promise((resolve) => {
    process.on("message", (command: TrainingProcessCommand) => {
      if (command.type === "start") resolve(command.input);
      else if (command.type === "abort") stop();
    });
  });
}
