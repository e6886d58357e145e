// Supervised fine-tuning with LoRA: the hyperparameters' rules, the sets fitted
// to maxLength, and the SFT objective (token cross-entropy over micro-batches,
// eval loss, token accuracy and exact match) run by the shared loop
// (training-loop.ts: accumulation, clip, AdamW, schedule, checkpoint, cancel and
// resume). The data order is a pure function of (seed, epoch) and the learning
// rate of the step number, so a checkpoint that holds the adapter, the
// optimizer moments and the step resumes exactly.
import { countTargets, countTokens, makeBatch } from "../data/batching.js";
import { LOSS_ON } from "../data/examples.js";
import { prepareSet, TRUNCATION_MODES } from "../data/truncation.js";
import { allowedValues, EngineError } from "../errors.js";
import type { Batch, ModelGraph } from "../graph/model.js";
import type { LoraLayers } from "../graph/weights.js";
import type {
  DatasetRow,
  PreparedSets,
  TokenizedExample,
  Tokenizer,
  TrainHyperparameters,
  TrainOptions,
  TrainProgress,
  TrainResult,
} from "../types.js";
import { LR_SCHEDULER_TYPES } from "./schedule.js";
import {
  DEFAULT_EXACT_MATCH_MAX_TOKENS,
  DEFAULT_EXACT_MATCH_SAMPLES,
  ExactMatchRunner,
  exactMatchSample,
} from "./task-metrics.js";
import {
  nextTick,
  type ResolvedHyperparameters,
  runTrainingLoop,
  startTrainingRun,
  type TrainingObjective,
} from "./training-loop.js";

// ResolvedHyperparameters is the loop's input, so it is declared there; exported here beside resolveHyperparameters.
export type { ResolvedHyperparameters } from "./training-loop.js";
// epochOrder lives with the loop that uses it; it stays importable from here for the other trainers.
export { epochOrder } from "./training-loop.js";

/** The seed of a job that names none: its data order, and the server's eval split (training-sets.ts). */
export const DEFAULT_SEED = 42;

/** Hyperparameters with defaults applied; a bad value is an EngineError naming the field. */
export function resolveHyperparameters(h: TrainHyperparameters): ResolvedHyperparameters {
  const s: ResolvedHyperparameters = {
    lora: h.lora,
    maxSteps: h.maxSteps,
    numTrainEpochs: h.numTrainEpochs ?? 1,
    learningRate: h.learningRate ?? 2e-4,
    batchSize: h.batchSize ?? 4,
    gradientAccumulationSteps: h.gradientAccumulationSteps ?? 1,
    lrSchedulerType: h.lrSchedulerType ?? "linear",
    warmupSteps: h.warmupSteps ?? 0,
    weightDecay: h.weightDecay ?? 0,
    maxGradNorm: h.maxGradNorm ?? 1.0,
    adamBeta1: h.adamBeta1 ?? 0.9,
    adamBeta2: h.adamBeta2 ?? 0.999,
    adamEpsilon: h.adamEpsilon ?? 1e-8,
    evalSteps: h.evalSteps,
    saveSteps: h.saveSteps,
    exactMatchMaxTokens: h.exactMatchMaxTokens ?? DEFAULT_EXACT_MATCH_MAX_TOKENS,
    exactMatchSamples: h.exactMatchSamples ?? DEFAULT_EXACT_MATCH_SAMPLES,
    maxLength: h.maxLength ?? 512,
    lossOn: h.lossOn ?? "assistant",
    truncation: h.truncation ?? "keep_answers",
    seed: h.seed ?? DEFAULT_SEED,
  };
  const bad = (field: string, want: string, value: unknown) =>
    new EngineError(
      "invalid_argument",
      `hyperparameters.${field} must be ${want} (got ${JSON.stringify(value)})`,
    );
  const positiveInt = (field: keyof ResolvedHyperparameters, optional = false) => {
    const v = s[field];
    if (optional && v === undefined) return;
    if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw bad(field, "a positive integer", v);
  };
  const nonNegative = (field: keyof ResolvedHyperparameters) => {
    const v = s[field];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw bad(field, "a number ≥ 0", v);
  };
  positiveInt("batchSize");
  positiveInt("gradientAccumulationSteps");
  positiveInt("maxSteps", true);
  positiveInt("evalSteps", true);
  positiveInt("saveSteps", true);
  nonNegative("learningRate");
  nonNegative("weightDecay");
  nonNegative("maxGradNorm");
  nonNegative("warmupSteps");
  nonNegative("exactMatchMaxTokens");
  nonNegative("exactMatchSamples");
  for (const field of ["warmupSteps", "exactMatchMaxTokens", "exactMatchSamples"] as const) {
    if (!Number.isInteger(s[field])) throw bad(field, "an integer ≥ 0", s[field]);
  }
  if (!(typeof s.numTrainEpochs === "number" && s.numTrainEpochs > 0 && Number.isFinite(s.numTrainEpochs))) {
    throw bad("numTrainEpochs", "a number > 0", s.numTrainEpochs);
  }
  if (!Number.isInteger(s.maxLength) || s.maxLength < 2)
    throw bad("maxLength", "an integer ≥ 2", s.maxLength);
  if (!Number.isInteger(s.seed)) throw bad("seed", "an integer", s.seed);
  for (const field of ["adamBeta1", "adamBeta2"] as const) {
    if (!(s[field] >= 0 && s[field] < 1)) throw bad(field, "in [0, 1)", s[field]);
  }
  if (!(s.adamEpsilon > 0)) throw bad("adamEpsilon", "a number > 0", s.adamEpsilon);
  if (!LR_SCHEDULER_TYPES.includes(s.lrSchedulerType)) {
    throw bad("lrSchedulerType", allowedValues(LR_SCHEDULER_TYPES), s.lrSchedulerType);
  }
  if (!LOSS_ON.includes(s.lossOn)) throw bad("lossOn", allowedValues(LOSS_ON), s.lossOn);
  if (!TRUNCATION_MODES.includes(s.truncation)) {
    throw bad("truncation", allowedValues(TRUNCATION_MODES), s.truncation);
  }
  if (!s.lora || typeof s.lora !== "object")
    throw bad("lora", "an object { r, alpha, targetModules }", s.lora);
  return s;
}

/**
 * The sets fitted to maxLength under hyperparameters.truncation, with the rows
 * cut and dropped (truncation.ts). train() calls it, or takes its result from
 * a caller that reports it before training starts. rowNumbers name rows in
 * errors and in the report when the sets were split from one file.
 */
export function prepareSets(
  tokenizer: Tokenizer,
  trainSet: DatasetRow[],
  evalSet: DatasetRow[] | undefined,
  hyperparameters: TrainHyperparameters,
  rowNumbers: { train?: number[]; eval?: number[] } = {},
): PreparedSets {
  const s = resolveHyperparameters(hyperparameters);
  if (!Array.isArray(trainSet) || trainSet.length === 0) {
    throw new EngineError("invalid_argument", "trainSet is empty: training needs at least one example");
  }
  const fit = { maxLength: s.maxLength, lossOn: s.lossOn, truncation: s.truncation };
  return {
    train: prepareSet(tokenizer, trainSet, "trainSet", fit, rowNumbers.train),
    eval: evalSet?.length ? prepareSet(tokenizer, evalSet, "evalSet", fit, rowNumbers.eval) : null,
  };
}

/**
 * The optimizer steps a run over `examples` training examples takes: maxSteps
 * when set, else numTrainEpochs × ceil(examples / (batchSize × accumulation)),
 * rounded up. The one statement of the rule: train() runs it, the server
 * reports it and bounds jobs by it.
 */
export function plannedSteps(examples: number, hyperparameters: TrainHyperparameters): number {
  const s = resolveHyperparameters(hyperparameters);
  if (s.maxSteps !== undefined) return s.maxSteps;
  const stepsPerEpoch = Math.ceil(examples / (s.batchSize * s.gradientAccumulationSteps));
  return Math.ceil(s.numTrainEpochs * stepsPerEpoch);
}

export async function train(options: TrainOptions): Promise<TrainResult> {
  const settings = resolveHyperparameters(options.hyperparameters);
  const { model } = options;
  const prepared =
    options.prepared ??
    prepareSets(model.tokenizer, options.trainSet, options.evalSet, options.hyperparameters);
  const trainExamples = prepared.train.examples;
  const evalExamples = prepared.eval?.examples ?? [];
  const n = trainExamples.length;
  const run = startTrainingRun(options, settings, n, plannedSteps(n, options.hyperparameters));
  const { graph, lora, grads } = run;
  const B = settings.batchSize;
  const pad = model.tokenizer.padTokenId;
  // The exact-match sample is fixed for the run; its generator is made at the first eval that needs it.
  const exactMatchRows =
    settings.lossOn === "assistant"
      ? exactMatchSample(
          evalExamples,
          model.tokenizer,
          {
            maxTokens: settings.exactMatchMaxTokens,
            samples: settings.exactMatchSamples,
            seed: settings.seed,
          },
          model.config.maxPositionEmbeddings,
        )
      : null;
  let exactMatch: ExactMatchRunner | null = null;
  const objective: TrainingObjective<{ tokenAccuracy: number }, SftEval, TrainProgress> = {
    beginStep(indices) {
      // micro-batches of B; each token's gradient is scaled by 1 / the step's target count
      const batches: Batch[] = [];
      for (let i = 0; i < indices.length; i += B) {
        batches.push(
          makeBatch(
            indices.slice(i, i + B).map((j) => trainExamples[j]),
            pad,
          ),
        );
      }
      let stepTargets = 0;
      let tokens = 0;
      for (const batch of batches) {
        stepTargets += countTargets(batch);
        tokens += countTokens(batch);
      }
      let lossSum = 0;
      let correct = 0;
      return {
        tokens,
        microBatches: batches.length,
        microBatch(k) {
          const pass = graph.forward(batches[k], lora, 1 / stepTargets);
          lossSum += pass.lossSum;
          correct += pass.correct ?? 0;
          graph.backward(lora, grads);
        },
        result: () => ({ loss: lossSum / stepTargets, figures: { tokenAccuracy: correct / stepTargets } }),
      };
    },
    evaluate:
      evalExamples.length > 0
        ? async (evalSignal) => {
            const result = await evaluate(graph, lora, evalExamples, B, pad, evalSignal);
            if (result === null) return null;
            let exact: number | null = null;
            if (exactMatchRows) {
              exactMatch ??= new ExactMatchRunner(
                model,
                run.adapter,
                exactMatchRows,
                settings.exactMatchMaxTokens,
              );
              exact = await exactMatch.run(evalSignal);
            }
            return { loss: result.loss, tokenAccuracy: result.tokenAccuracy, exactMatch: exact };
          }
        : null,
    evalLoss: (e) => e.loss,
    report(base, figures, e) {
      const progress: TrainProgress = {
        step: base.step,
        totalSteps: base.totalSteps,
        loss: base.loss,
        evalLoss: e?.loss ?? null,
        evalTokenAccuracy: e?.tokenAccuracy ?? null,
        evalExactMatch: e?.exactMatch ?? null,
        learningRate: base.learningRate,
        epoch: base.epoch,
        tokensPerSecond: base.tokensPerSecond,
        trainedTokens: base.trainedTokens,
        tokenAccuracy: figures.tokenAccuracy,
      };
      const row = {
        step: base.step,
        loss: base.loss,
        eval_loss: progress.evalLoss,
        eval_token_accuracy: progress.evalTokenAccuracy,
        eval_exact_match: progress.evalExactMatch,
        learning_rate: base.learningRate,
        epoch: base.epoch,
      };
      return { progress, row };
    },
  };
  return runTrainingLoop(run, objective, options.onProgress);
}

/** An SFT eval: mean token loss, token accuracy, and exact match when lossOn is "assistant". */
interface SftEval {
  loss: number;
  tokenAccuracy: number;
  exactMatch: number | null;
}

/**
 * Mean token loss over a set, and the token accuracy (the fraction of its
 * trained tokens whose argmax logit is the target; task-metrics.ts), in
 * micro-batches of B (no gradients); null when aborted part-way.
 */
export async function evaluate(
  graph: ModelGraph,
  lora: LoraLayers | null,
  examples: TokenizedExample[],
  B: number,
  pad: number,
  signal?: AbortSignal,
): Promise<{ loss: number; tokenAccuracy: number } | null> {
  let lossSum = 0;
  let count = 0;
  let correct = 0;
  for (let i = 0; i < examples.length; i += B) {
    if (signal?.aborted) return null;
    const result = graph.forward(makeBatch(examples.slice(i, i + B), pad), lora);
    lossSum += result.lossSum;
    count += result.count;
    correct += result.correct ?? 0;
    await nextTick();
  }
  return { loss: lossSum / count, tokenAccuracy: correct / count };
}
