// Messages between a job runner and its training thread.
import type { TrainHyperparameters, TrainProgress, TrainResult } from "@svc/engine";

export interface TrainingThreadInput {
  modelDir: string;
  trainPath: string;
  evalPath: string | null;
  evalFraction: number | null;
  hyperparameters: TrainHyperparameters;
  outputDir: string;
  resumeFrom: string | null;
  dryRun: boolean;
}

export type TrainingThreadMessage =
  | { type: "started"; totalSteps: number; trainExamples: number; evalExamples: number }
  | { type: "progress"; progress: TrainProgress }
  | { type: "checkpoint"; step: number; dir: string }
  | { type: "result"; result: TrainResult | null; trainSeconds: number }
  | { type: "error"; message: string; step: number | null };

export type TrainingThreadCommand = { type: "abort" };
