// GRPO (DeepSeekMath's group relative policy optimisation) with LoRA: the
// shared loop (training-loop.ts, as train.ts and preference-train.ts use it)
// where each step samples a group of completions per prompt, scores them, and
// takes one policy-gradient update (grpo-step-pass.ts, grpo-step.ts,
// grpo-objective.ts). batchSize counts prompts per micro-batch and a step takes
// batchSize × gradientAccumulationSteps prompts, so a step trains on that many
// × numGenerations completions; the data order, schedule, clipping, AdamW,
// checkpoints and resume are the loop's.
import { allowedValues, EngineError } from "../errors.js";
import { createGenerator } from "../generation/generate.js";
import type { Tokenizer, TrainHyperparameters, TrainOptions, TrainProgress, TrainResult } from "../types.js";
import { evaluateGrpo, type GrpoEvalMetrics, type GrpoEvalSet } from "./grpo-eval.js";
import {
  DEFAULT_GRPO,
  GRPO_NORMALIZATIONS,
  type GrpoNormalization,
  type GrpoSettings,
} from "./grpo-objective.js";
import { type GrpoScorer, resolveRewards } from "./grpo-rewards.js";
import { type GrpoRow, preparePrompts, type SampledCompletion } from "./grpo-step.js";
import {
  beginGrpoStep,
  type GrpoMetrics,
  type GrpoStepContext,
  type GrpoStepFigures,
} from "./grpo-step-pass.js";
import { plannedSteps, resolveHyperparameters } from "./train.js";
import { frozenStartAdapter, type TrainerState } from "./train-checkpoint.js";
import { runTrainingLoop, startTrainingRun, type TrainingObjective } from "./training-loop.js";

// GrpoMetrics is what a step's pass computes, so it is declared there; exported here with the progress.
export type { GrpoMetrics } from "./grpo-step-pass.js";

export interface GrpoHyperparameters {
  /** Completions sampled per prompt, the group (default 8, at least 2). */
  numGenerations?: number;
  /** Sampling temperature (default 1; 0 = greedy, which gives a group nothing to compare). */
  temperature?: number;
  topP?: number;
  /** Most tokens of one completion (default 64). */
  maxCompletionTokens?: number;
  /** KL penalty weight to the reference (default 0: no reference pass). */
  beta?: number;
  /** The ratio's clip ε (default 0.2); epsilonHigh defaults to it. */
  epsilon?: number;
  epsilonHigh?: number;
  scaleRewards?: boolean;
  normalization?: GrpoNormalization;
  /** With an eval set: completions sampled per eval prompt at each eval (default 1; grpo-eval.ts). */
  evalGenerations?: number;
}

export type GrpoTrainHyperparameters = TrainHyperparameters & GrpoHyperparameters;

export interface GrpoResolved extends GrpoSettings {
  numGenerations: number;
  temperature: number;
  topP: number;
  maxCompletionTokens: number;
  evalGenerations: number;
}

const bad = (message: string): never => {
  throw new EngineError("invalid_argument", message);
};

export function resolveGrpo(h: GrpoHyperparameters): GrpoResolved {
  const r: GrpoResolved = {
    numGenerations: h.numGenerations ?? 8,
    temperature: h.temperature ?? 1,
    topP: h.topP ?? 1,
    maxCompletionTokens: h.maxCompletionTokens ?? 64,
    evalGenerations: h.evalGenerations ?? 1,
    beta: h.beta ?? DEFAULT_GRPO.beta,
    epsilon: h.epsilon ?? DEFAULT_GRPO.epsilon,
    epsilonHigh: h.epsilonHigh ?? h.epsilon ?? DEFAULT_GRPO.epsilonHigh,
    scaleRewards: h.scaleRewards ?? DEFAULT_GRPO.scaleRewards,
    normalization: h.normalization ?? DEFAULT_GRPO.normalization,
  };
  if (!Number.isInteger(r.numGenerations) || r.numGenerations < 2)
    bad(`hyperparameters.numGenerations must be an integer >= 2 (got ${r.numGenerations})`);
  if (!(r.temperature >= 0 && Number.isFinite(r.temperature)))
    bad(`hyperparameters.temperature must be >= 0 (got ${r.temperature})`);
  if (!(r.topP > 0 && r.topP <= 1)) bad(`hyperparameters.topP must be in (0, 1] (got ${r.topP})`);
  if (!Number.isInteger(r.maxCompletionTokens) || r.maxCompletionTokens < 1)
    bad(`hyperparameters.maxCompletionTokens must be an integer >= 1 (got ${r.maxCompletionTokens})`);
  if (!Number.isInteger(r.evalGenerations) || r.evalGenerations < 1)
    bad(`hyperparameters.evalGenerations must be an integer >= 1 (got ${r.evalGenerations})`);
  if (!GRPO_NORMALIZATIONS.includes(r.normalization))
    bad(
      `hyperparameters.normalization must be ${allowedValues(GRPO_NORMALIZATIONS)} (got ${r.normalization})`,
    );
  return r;
}

export interface GrpoProgress extends TrainProgress {
  grpo: GrpoMetrics;
  /** Seconds spent sampling, scoring and updating this step. */
  timing: GrpoStepFigures["timing"];
  /** The eval set's figures when an eval ran at this step (every evalSteps-th and the last); else null. */
  evalGrpo: GrpoEvalMetrics | null;
}

export interface GrpoTrainOptions
  extends Omit<TrainOptions, "trainSet" | "evalSet" | "hyperparameters" | "prepared" | "onProgress"> {
  trainSet: GrpoRow[];
  /** 1-based numbers of the train rows in their file (errors name them), default their index + 1. */
  rowNumbers?: number[];
  /** Held-out prompts, sampled and scored at each eval (grpo-eval.ts); absent or empty: no eval. */
  evalSet?: GrpoRow[];
  /** 1-based numbers of the eval rows in their file, default their index + 1. */
  evalRowNumbers?: number[];
  hyperparameters: GrpoTrainHyperparameters;
  score: GrpoScorer;
  /** Names of the scorer's rewards, in the order it returns them (default ["reward"]). */
  rewardNames?: string[];
  /** Weights combining them (default 1 each). */
  rewardWeights?: number[];
  /** Samples shown per step (default 4). */
  samplesPerStep?: number;
  onProgress?: (progress: GrpoProgress) => void | Promise<void>;
  /**
   * Tests: fixed completions in place of sampling (numGenerations per row of `rows`, in order), so a
   * step can be compared with the torch backend's on the same completions; everything else is unchanged.
   */
  sampleCompletions?: (rows: number[], step: number) => SampledCompletion[];
}

/** The eval set's prompts, tokenized once (a row that cannot be a prompt is refused by its number). */
function heldOut(tokenizer: Tokenizer, options: GrpoTrainOptions, maxLength: number): GrpoEvalSet | null {
  const rows = options.evalSet;
  if (!rows?.length) return null;
  const rowNumbers = rows.map((_, i) => options.evalRowNumbers?.[i] ?? i + 1);
  return { rows, rowNumbers, prompts: preparePrompts(tokenizer, rows, "evalSet", rowNumbers, maxLength) };
}

export async function trainGrpo(options: GrpoTrainOptions): Promise<TrainResult> {
  const settings = resolveHyperparameters(options.hyperparameters);
  const grpo = resolveGrpo(options.hyperparameters);
  const [names, weights] = resolveRewards(options.rewardNames, options.rewardWeights);
  const rewards = { score: options.score, names, weights };
  const { model, signal } = options;
  if (!Array.isArray(options.trainSet) || options.trainSet.length === 0)
    bad("trainSet is empty: GRPO needs at least one prompt");
  const prompts = preparePrompts(
    model.tokenizer,
    options.trainSet,
    "trainSet",
    options.rowNumbers,
    settings.maxLength,
  );
  const evalSet = heldOut(model.tokenizer, options, settings.maxLength);
  const n = prompts.length;
  const run = startTrainingRun(options, settings, n, plannedSteps(n, options.hyperparameters));
  // From a start adapter, that adapter, frozen, is the reference (kept also on resume); else the adapter off.
  const reference =
    options.startAdapter && grpo.beta > 0
      ? frozenStartAdapter(options.startAdapter, model.config, settings.lora, settings.seed)
      : null;
  // samples under the adapter object the optimizer updates in place: always the current policy
  const generator = createGenerator(model, {
    maxBatch: Math.min(64, run.samplesPerStep * grpo.numGenerations),
  });
  const sampling = { ...grpo, maxLength: settings.maxLength, seed: settings.seed };
  const context: GrpoStepContext = {
    trainSet: options.trainSet,
    prompts,
    rowNumber: (i) => options.rowNumbers?.[i] ?? i + 1,
    generator,
    adapter: run.adapter,
    sampling,
    grpo,
    batchSize: settings.batchSize,
    pass: { graph: run.graph, lora: run.lora, grads: run.grads, reference, pad: model.tokenizer.padTokenId },
    rewards,
    samplesShown: options.samplesPerStep,
    sampleCompletions: options.sampleCompletions,
    signal,
  };
  const objective: TrainingObjective<GrpoStepFigures, GrpoEvalMetrics, GrpoProgress> = {
    beginStep: (indices) => beginGrpoStep(context, indices, run.step),
    evaluate: evalSet
      ? (evalSignal) =>
          evaluateGrpo(
            generator,
            run.adapter,
            evalSet,
            { ...sampling, numGenerations: grpo.evalGenerations },
            rewards,
            run.step,
            evalSignal,
          )
      : null,
    // GRPO's eval is rewards, not a loss
    evalLoss: () => null,
    report(base, figures, evalGrpo) {
      const progress: GrpoProgress = {
        step: base.step,
        totalSteps: base.totalSteps,
        loss: base.loss,
        evalLoss: null,
        evalTokenAccuracy: null,
        evalExactMatch: null,
        learningRate: base.learningRate,
        epoch: base.epoch,
        tokensPerSecond: figures.tokensPerSecond,
        trainedTokens: base.trainedTokens,
        grpo: figures.grpo,
        timing: figures.timing,
        evalGrpo,
      };
      const { samples: _samples, ...logged } = figures.grpo;
      const row = {
        step: base.step,
        loss: base.loss,
        eval_loss: null,
        learning_rate: base.learningRate,
        epoch: base.epoch,
        grpo: logged,
        ...(evalGrpo ? { eval_grpo: evalGrpo } : {}),
      } as TrainerState["log_history"][number];
      return { progress, row };
    },
  };
  return runTrainingLoop(run, objective, options.onProgress);
}
