// Preference tuning (DPO, SimPO) with LoRA: the shared loop (training-loop.ts)
// with pairs for examples and a preference loss (preference-loss.ts,
// preference-step.ts) for its objective.
// The same hyperparameters mean the same things: batchSize counts pairs per
// micro-batch, the data order is epochOrder(seed, epoch) over the pairs, the
// schedule, clipping, AdamW, checkpoints (trainer_state.json + optimizer state)
// and resume are train()'s. Each step's loss is the mean over its pairs.
// From a startAdapter the policy is a trainable copy of that adapter and the
// reference the adapter itself, frozen (as GRPO's): step 1's rewards are 0.

import type { PreferenceRow } from "../data/preference-dataset.js";
import { EngineError } from "../errors.js";
import type { TrainHyperparameters, TrainOptions, TrainProgress, TrainResult } from "../types.js";
import {
  type PreferenceHyperparameters,
  PreferenceMeter,
  type PreferenceMetrics,
  resolvePreference,
} from "./preference-loss.js";
import {
  evaluatePairs,
  type PreparedPairs,
  pairPass,
  preparePairs,
  ReferenceLogProbs,
} from "./preference-step.js";
import { plannedSteps, resolveHyperparameters } from "./train.js";
import { frozenStartAdapter, type TrainerState } from "./train-checkpoint.js";
import { runTrainingLoop, startTrainingRun, type TrainingObjective } from "./training-loop.js";

export type PreferenceTrainHyperparameters = TrainHyperparameters & PreferenceHyperparameters;

export interface PreparedPairSets {
  train: PreparedPairs;
  eval: PreparedPairs | null;
}

/** The step's preference figures (means over its pairs), and the eval set's when an eval ran. */
export interface PreferenceProgress extends TrainProgress {
  preference: Omit<PreferenceMetrics, "loss" | "pairs">;
  evalPreference: Omit<PreferenceMetrics, "pairs"> | null;
}

export interface PreferenceTrainOptions
  extends Omit<TrainOptions, "trainSet" | "evalSet" | "hyperparameters" | "prepared" | "onProgress"> {
  trainSet: PreferenceRow[];
  evalSet?: PreferenceRow[];
  hyperparameters: PreferenceTrainHyperparameters;
  prepared?: PreparedPairSets;
  onProgress?: (progress: PreferenceProgress) => void | Promise<void>;
}

/** The pair sets fitted to maxLength (keep_answers cuts only the prompt); rowNumbers as prepareSets. */
export function preparePairSets(
  tokenizer: TrainOptions["model"]["tokenizer"],
  trainSet: PreferenceRow[],
  evalSet: PreferenceRow[] | undefined,
  hyperparameters: PreferenceTrainHyperparameters,
  rowNumbers: { train?: number[]; eval?: number[] } = {},
): PreparedPairSets {
  const s = resolveHyperparameters(hyperparameters);
  resolvePreference(hyperparameters);
  if (s.lossOn !== "assistant") {
    throw new EngineError(
      "invalid_argument",
      'hyperparameters.lossOn must be "assistant" for preference tuning',
    );
  }
  if (!Array.isArray(trainSet) || trainSet.length === 0) {
    throw new EngineError("invalid_argument", "trainSet is empty: preference tuning needs at least one pair");
  }
  const fit = { maxLength: s.maxLength, lossOn: s.lossOn, truncation: s.truncation };
  return {
    train: preparePairs(tokenizer, trainSet, "trainSet", fit, rowNumbers.train),
    eval: evalSet?.length ? preparePairs(tokenizer, evalSet, "evalSet", fit, rowNumbers.eval) : null,
  };
}

export async function trainPreference(options: PreferenceTrainOptions): Promise<TrainResult> {
  const settings = resolveHyperparameters(options.hyperparameters);
  const preference = resolvePreference(options.hyperparameters);
  const { model } = options;
  const prepared =
    options.prepared ??
    preparePairSets(model.tokenizer, options.trainSet, options.evalSet, options.hyperparameters);
  const pairs = prepared.train.pairs;
  const evalPairs = prepared.eval?.pairs ?? [];
  const n = pairs.length;
  const run = startTrainingRun(options, settings, n, plannedSteps(n, options.hyperparameters));
  const { graph, lora, grads } = run;
  // the reference: the start adapter, frozen, or the run's graph with the adapter off (no copy of
  // anything). SimPO has no reference.
  const referenceLora =
    options.startAdapter && preference.loss === "sigmoid"
      ? frozenStartAdapter(options.startAdapter, model.config, settings.lora, settings.seed)
      : null;
  const B = settings.batchSize;
  const pad = model.tokenizer.padTokenId;
  const reference = new ReferenceLogProbs(n);
  const evalReference = new ReferenceLogProbs(evalPairs.length);
  type Figures = PreferenceProgress["preference"];
  type Eval = NonNullable<PreferenceProgress["evalPreference"]>;
  const objective: TrainingObjective<Figures, Eval, PreferenceProgress> = {
    beginStep(indices) {
      // micro-batches of B pairs; each pair's gradient is scaled by 1 / the step's pairs
      const meter = new PreferenceMeter();
      let tokens = 0;
      for (const j of indices) tokens += pairs[j].chosen.inputIds.length + pairs[j].rejected.inputIds.length;
      const pass = {
        graph,
        lora,
        grads,
        gradScale: 1 / indices.length,
        settings: preference,
        pad,
        reference,
        referenceLora,
      };
      return {
        tokens,
        microBatches: Math.ceil(indices.length / B),
        microBatch(k) {
          for (const l of pairPass(pairs, indices.slice(k * B, k * B + B), pass)) meter.add(l);
        },
        result() {
          const { loss, pairs: _pairs, ...figures } = meter.result();
          return { loss, figures };
        },
      };
    },
    evaluate:
      evalPairs.length > 0
        ? async (signal) => {
            const result = await evaluatePairs(
              evalPairs,
              B,
              { graph, lora, settings: preference, pad, reference: evalReference, referenceLora },
              signal,
            );
            if (result === null) return null;
            const { pairs: _, ...figures } = result;
            return figures;
          }
        : null,
    evalLoss: (e) => e.loss,
    report(base, figures, evalPreference) {
      const progress: PreferenceProgress = {
        step: base.step,
        totalSteps: base.totalSteps,
        loss: base.loss,
        evalLoss: evalPreference?.loss ?? null,
        evalTokenAccuracy: null,
        evalExactMatch: null,
        learningRate: base.learningRate,
        epoch: base.epoch,
        tokensPerSecond: base.tokensPerSecond,
        trainedTokens: base.trainedTokens,
        preference: figures,
        evalPreference,
      };
      const row = {
        step: base.step,
        loss: base.loss,
        eval_loss: progress.evalLoss,
        learning_rate: base.learningRate,
        epoch: base.epoch,
        rewards: figures,
        eval_rewards: evalPreference,
      } as TrainerState["log_history"][number];
      return { progress, row };
    },
  };
  return runTrainingLoop(run, objective, options.onProgress);
}
