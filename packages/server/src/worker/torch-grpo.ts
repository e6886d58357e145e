// A method "grpo" job on the torch backend, the worker's half: the prompts
// tokenized by the engine (svc_trainer samples after them), and the answers to
// svc_trainer's "score" requests. Python samples each step's completions with
// its own sampling and asks; this process decodes them as the engine's
// generator does, scores them with the job's scorer (the graders, run here as
// on the engine backend: no user code runs in the server) and answers with the
// engine's own group advantages, zero-group rule and reward figures, so only
// the sampling and the update are PyTorch's. A scorer that fails or a reward
// that is not finite is answered as an error, which fails the job naming the
// step and row: nothing is trained on it.
import {
  evalFigures,
  type GrpoEvalMetrics,
  type GrpoPrompt,
  type GrpoRow,
  groupAdvantages,
  plannedSteps,
  preparePrompts,
  readPromptDataset,
  resolveGrpo,
  resolveHyperparameters,
  scoreBatch,
  stepRewardFigures,
  type Tokenizer,
} from "@svc/engine";
import type { EngineJobHyperparameters } from "../engine-hyperparameters.js";
import type { GraderScorer } from "./training-grpo.js";
import type { TrainingProcessInput, TrainingProcessMessage } from "./training-protocol.js";
import { type ModelHeader, torchModelHeader } from "./training-sets.js";

/**
 * The job's prompt rows (and its eval set's, evalDatasetId), the model's header
 * (PyTorch reads the weights), the prompts tokenized and the "started" report.
 */
export async function readTorchGrpoSet(input: TrainingProcessInput): Promise<{
  model: ModelHeader;
  trainSet: GrpoRow[];
  prompts: GrpoPrompt[];
  evalSet: GrpoRow[];
  evalPrompts: GrpoPrompt[];
  started: Extract<TrainingProcessMessage, { type: "started" }>;
}> {
  const trainSet = await readPromptDataset(input.trainPath);
  const evalSet = input.evalPath ? await readPromptDataset(input.evalPath) : [];
  const model = await torchModelHeader(input);
  const { maxLength } = resolveHyperparameters(input.hyperparameters);
  const prompts = torchGrpoPrompts(model.tokenizer, trainSet, maxLength, "trainSet");
  const evalPrompts = torchGrpoPrompts(model.tokenizer, evalSet, maxLength, "evalSet");
  const started = {
    type: "started" as const,
    totalSteps: plannedSteps(trainSet.length, input.hyperparameters),
    trainExamples: trainSet.length,
    evalExamples: evalSet.length,
    truncatedRows: 0,
    droppedRows: 0,
    rowNotes: [],
  };
  return { model, trainSet, prompts, evalSet, evalPrompts, started };
}

/**
 * The train rows' prompts as the engine tokenizes them. A row asking for a
 * response_format is refused by number: the torch backend's sampling has no
 * constrained decoding, and a completion the grammar would not allow is not one
 * the job asked to train on.
 */
export function torchGrpoPrompts(
  tokenizer: Tokenizer,
  rows: GrpoRow[],
  maxLength: number,
  set: "trainSet" | "evalSet" = "trainSet",
): GrpoPrompt[] {
  const prompts = preparePrompts(tokenizer, rows, set, undefined, maxLength);
  const constrained = prompts.findIndex((p) => p.grammar !== undefined);
  if (constrained >= 0)
    throw new Error(
      `${set} row ${constrained + 1}: response_format asks for constrained decoding, which the torch backend's sampling does not do; train this job on the engine backend`,
    );
  return prompts;
}

/** What svc_trainer asks (grpo.py): the step's completions, numGenerations per prompt in order. */
export interface TorchScoreRequest {
  type: "score";
  /** "eval": an eval's completions (evalGenerations per eval prompt), scored for its figures only. */
  set?: "eval";
  step: number;
  completions: { row: number; tokenIds: number[] }[];
}

export type TorchScoreReply =
  | {
      type: "scores";
      step: number;
      advantages: number[];
      zeroGroups: boolean[];
      figures: ReturnType<typeof stepRewardFigures>;
    }
  | { type: "scores"; step: number; figures: GrpoEvalMetrics }
  | { type: "scores"; step: number; error: string };

/** Answers svc_trainer's score requests for one job: a step's completions, or an eval's (set "eval"). */
export function torchScorer(
  rows: GrpoRow[],
  tokenizer: Tokenizer,
  hyperparameters: EngineJobHyperparameters,
  scorer: GraderScorer,
  evalRows: GrpoRow[] = [],
): (request: TorchScoreRequest) => Promise<TorchScoreReply> {
  const grpo = resolveGrpo(hyperparameters);
  const eos = new Set(tokenizer.eosTokenIds);
  return async (request) => {
    try {
      const set: "eval" | undefined = request.set === "eval" ? "eval" : undefined;
      // the text the engine's generator returns: the end-of-turn token ends it and adds no text
      const texts = request.completions.map((c) =>
        tokenizer.decode(
          c.tokenIds.filter((id) => !eos.has(id)),
          { skipSpecialTokens: true },
        ),
      );
      const items = request.completions.map((c, i) => ({
        row: (set ? evalRows : rows)[c.row],
        rowNumber: c.row + 1,
        completion: texts[i],
        ...(set ? { set } : {}),
      }));
      const [scores, combined] = await scoreBatch(
        scorer.score,
        items,
        scorer.rewardNames,
        scorer.rewardWeights,
        request.step,
        set,
      );
      if (set) {
        const lengths = request.completions.map((c) => c.tokenIds.length);
        return {
          type: "scores",
          step: request.step,
          figures: evalFigures(scores, combined, scorer.rewardNames, lengths),
        };
      }
      const { advantages, zeroGroups } = groupAdvantages(combined, grpo.numGenerations, grpo.scaleRewards);
      return {
        type: "scores",
        step: request.step,
        advantages: [...advantages],
        zeroGroups,
        figures: stepRewardFigures(
          items,
          scores,
          combined,
          advantages,
          zeroGroups,
          scorer.rewardNames,
          grpo.numGenerations,
        ),
      };
    } catch (error) {
      return { type: "scores", step: request.step, error: (error as Error).message ?? String(error) };
    }
  };
}
