// Messages between a job runner and its training process.
import type { TrainHyperparameters, TrainProgress, TrainResult } from "@svc/engine";
import type { TruncationRowNote } from "../wire.js";

export interface TrainingProcessInput {
  modelDir: string;
  trainPath: string;
  evalPath: string | null;
  evalFraction: number | null;
  hyperparameters: TrainHyperparameters;
  outputDir: string;
  resumeFrom: string | null;
  dryRun: boolean;
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
    }
  | { type: "progress"; progress: TrainProgress }
  | { type: "checkpoint"; step: number; dir: string }
  | { type: "result"; result: TrainResult | null; trainSeconds: number }
  | { type: "error"; message: string; step: number | null };

export type TrainingProcessCommand = { type: "start"; input: TrainingProcessInput } | { type: "abort" };
