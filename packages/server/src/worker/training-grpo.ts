// A method "grpo" job in the training process: its prompt rows and the scorer
// that rewards each sampled completion with the job's graders (graders are
// data, so running them here is safe: no user code runs in the server). A
// grader that cannot grade a completion fails the step naming the row and the
// grader, and the engine trains nothing on it (grpo-rewards.ts).
import {
  type GrpoRow,
  type GrpoScoreItem,
  type GrpoScorer,
  loadModel,
  type Model,
  plannedSteps,
  readPromptDataset,
} from "@svc/engine";
import type { JobGrader } from "@svc/wire";
import { grade } from "../graders/grade.js";
import type { Judge } from "../graders/score-model.js";
import { sampleOf } from "../graders/templates.js";
import { parsedGraders } from "../routes/job-grpo.js";
import type { TrainingProcessInput, TrainingProcessMessage } from "./training-protocol.js";

export interface GrpoTrainingSet {
  model: Model;
  trainSet: GrpoRow[];
  /** The eval set's prompts (evalDatasetId); empty without one. */
  evalSet: GrpoRow[];
  started: Extract<TrainingProcessMessage, { type: "started" }>;
}

export async function readGrpoTrainingSet(input: TrainingProcessInput): Promise<GrpoTrainingSet> {
  const trainSet = await readPromptDataset(input.trainPath);
  const evalSet = input.evalPath ? await readPromptDataset(input.evalPath) : [];
  const model = await loadModel(input.modelDir);
  return {
    model,
    trainSet,
    evalSet,
    started: {
      type: "started",
      totalSteps: plannedSteps(trainSet.length, input.hyperparameters),
      trainExamples: trainSet.length,
      evalExamples: evalSet.length,
      truncatedRows: 0,
      droppedRows: 0,
      rowNotes: [],
    },
  };
}

export interface GraderScorer {
  score: GrpoScorer;
  /** The graders' names (made unique with their index where two share one), the step log's reward keys. */
  rewardNames: string[];
  rewardWeights: number[];
}

/** `judge` runs the graders' score_model judges (training-judge.ts); a job without one has none. */
export function graderScorer(graders: readonly JobGrader[], judge?: Judge): GraderScorer {
  const parsed = parsedGraders(graders);
  const names = parsed.map(({ grader }) => grader.name);
  const rewardNames = names.map((name, i) => (names.indexOf(name) === i ? name : `${name}#${i}`));
  const score = async (batch: GrpoScoreItem[]): Promise<number[][]> => {
    const out: number[][] = [];
    for (const item of batch) {
      const ctx = { item: item.row, sample: sampleOf(item.completion) };
      const rewards: number[] = [];
      for (const [i, { grader }] of parsed.entries()) {
        try {
          rewards.push((await grade(grader, ctx, { judge }, `graders[${i}].grader`)).reward);
        } catch (error) {
          throw new Error(
            `row ${item.rowNumber}: graders[${i}] ("${grader.name}") could not grade a completion: ${(error as Error).message}`,
          );
        }
      }
      out.push(rewards);
    }
    return out;
  };
  return { score, rewardNames, rewardWeights: parsed.map((p) => p.weight) };
}
