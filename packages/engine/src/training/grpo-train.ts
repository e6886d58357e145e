// GRPO (DeepSeekMath's group relative policy optimisation) with LoRA: train()'s
// loop (train.ts, as preference-train.ts uses it) where each step samples a
// group of completions per prompt, scores them, and takes one policy-gradient
// update (grpo-step.ts, grpo-objective.ts). batchSize counts prompts per
// micro-batch and a step takes batchSize × gradientAccumulationSteps prompts,
// so a step trains on that many × numGenerations completions; the data order,
// schedule, clipping, AdamW, checkpoints and resume are train()'s.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { initLoraAdapter, loraLayersOf, loraParams, zerosLike } from "../adapters/lora.js";
import { saveAdapter } from "../adapters/peft.js";
import { allowedValues, EngineError } from "../errors.js";
import { createGenerator } from "../generation/generate.js";
import { ModelGraph } from "../graph/model.js";
import type { LoraLayers } from "../graph/weights.js";
import { getKernels } from "../kernels/index.js";
import type {
  CheckpointInfo,
  Tokenizer,
  TrainHyperparameters,
  TrainOptions,
  TrainProgress,
  TrainResult,
} from "../types.js";
import { evaluateGrpo, type GrpoEvalMetrics, type GrpoEvalSet } from "./grpo-eval.js";
import { stepRewardFigures } from "./grpo-figures.js";
import {
  DEFAULT_GRPO,
  GRPO_NORMALIZATIONS,
  type GrpoNormalization,
  type GrpoSettings,
  groupAdvantages,
} from "./grpo-objective.js";
import { type GrpoSample, type GrpoScorer, resolveRewards, scoreBatch } from "./grpo-rewards.js";
import {
  completionExample,
  type GrpoRow,
  grpoPass,
  preparePrompts,
  type SampledCompletion,
  sampleGroups,
} from "./grpo-step.js";
import { AdamW, clipGradNorm } from "./optim.js";
import { learningRateAt } from "./schedule.js";
import { epochOrder, plannedSteps, resolveHyperparameters } from "./train.js";
import {
  loadStartAdapter,
  restoreCheckpoint,
  type TrainerState,
  writeOptimizerState,
} from "./train-checkpoint.js";
import { resolvePrecision, trainingWeights } from "./train-precision.js";

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

/** One step's GRPO figures. */
export interface GrpoMetrics {
  /** Mean combined reward over the step's completions, and the mean of the groups' standard deviations. */
  reward: number;
  rewardStd: number;
  /** Each reward function's own mean. */
  rewards: Record<string, number>;
  /** Mean k3 KL to the reference over the trained tokens; null when beta = 0 (no reference pass). */
  kl: number | null;
  /** Mean completion length in tokens. */
  completionLength: number;
  /** Fraction of groups whose rewards were all equal (they train nothing). */
  zeroAdvantageFraction: number;
  clipFraction: number;
  /** A few of the step's completions (the first group's first ones) with their scores. */
  samples: GrpoSample[];
}

export interface GrpoProgress extends TrainProgress {
  grpo: GrpoMetrics;
  /** Seconds spent sampling, scoring and updating this step. */
  timing: { generation: number; scoring: number; update: number };
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

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));
const seconds = (since: number) => (performance.now() - since) / 1000;

export async function trainGrpo(options: GrpoTrainOptions): Promise<TrainResult> {
  const settings = resolveHyperparameters(options.hyperparameters);
  const grpo = resolveGrpo(options.hyperparameters);
  const [rewardNames, rewardWeights] = resolveRewards(options.rewardNames, options.rewardWeights);
  const precision = resolvePrecision(options.precision, options.baseWeights, getKernels());
  const { model, outputDir, signal } = options;
  const config = model.config;
  if (!Array.isArray(options.trainSet) || options.trainSet.length === 0)
    bad("trainSet is empty: GRPO needs at least one prompt");
  const prompts = preparePrompts(
    model.tokenizer,
    options.trainSet,
    "trainSet",
    options.rowNumbers,
    settings.maxLength,
  );
  const rowNumber = (i: number) => options.rowNumbers?.[i] ?? i + 1;
  const evalSet = heldOut(model.tokenizer, options, settings.maxLength);
  const n = prompts.length;
  const G = grpo.numGenerations;
  const B = settings.batchSize;
  const samplesPerStep = B * settings.gradientAccumulationSteps;
  const stepsPerEpoch = Math.ceil(n / samplesPerStep);
  const totalSteps = plannedSteps(n, options.hyperparameters);
  const pad = model.tokenizer.padTokenId;

  const adapter = initLoraAdapter(config, settings.lora, settings.seed);
  const lora = loraLayersOf(adapter, config);
  const gradAdapter = zerosLike(adapter);
  const grads = loraLayersOf(gradAdapter, config);
  const params = loraParams(adapter);
  const gradList = loraParams(gradAdapter);
  const optimizer = new AdamW(params, {
    beta1: settings.adamBeta1,
    beta2: settings.adamBeta2,
    eps: settings.adamEpsilon,
    weightDecay: settings.weightDecay,
  });
  const history: TrainerState["log_history"] = [];
  let step = 0;
  if (options.resumeFrom) {
    step = restoreCheckpoint(options.resumeFrom, adapter, optimizer, history, {
      n,
      samplesPerStep,
      seed: settings.seed,
    });
  } else if (options.startAdapter) loadStartAdapter(options.startAdapter, adapter);
  // From a start adapter, that adapter, frozen, is the reference (kept also on resume); else the adapter off.
  let reference: LoraLayers | null = null;
  if (options.startAdapter && grpo.beta > 0) {
    const frozen = initLoraAdapter(config, settings.lora, settings.seed);
    loadStartAdapter(options.startAdapter, frozen);
    reference = loraLayersOf(frozen, config);
  }
  const graph = new ModelGraph(config, trainingWeights(model.weights, config, precision));
  // samples under the adapter object the optimizer updates in place: always the current policy
  const generator = createGenerator(model, { maxBatch: Math.min(64, samplesPerStep * G) });
  const checkpoints: CheckpointInfo[] = [];
  const adapterBase = {
    baseModelName: options.baseModelName ?? model.dir,
    baseModelRevision: options.baseModelRevision,
  };
  const writeCheckpoint = async (): Promise<CheckpointInfo> => {
    const dir = join(outputDir, `checkpoint-${step}`);
    saveAdapter(adapter, dir, adapterBase);
    const state: TrainerState = {
      global_step: step,
      total_steps: totalSteps,
      epoch: step / stepsPerEpoch,
      seed: settings.seed,
      train_examples: n,
      samples_per_step: samplesPerStep,
      steps_per_epoch: stepsPerEpoch,
      data_position: {
        epoch: Math.floor(step / stepsPerEpoch),
        offset: (step % stepsPerEpoch) * samplesPerStep,
      },
      lora: { r: adapter.spec.r, alpha: adapter.spec.alpha, target_modules: adapter.spec.targetModules },
      log_history: history,
    };
    writeFileSync(join(dir, "trainer_state.json"), `${JSON.stringify(state, null, 2)}\n`);
    writeOptimizerState(join(dir, "optimizer.safetensors"), adapter, optimizer);
    const info = { step, dir };
    checkpoints.push(info);
    await options.onCheckpoint?.(info);
    return info;
  };
  const cancelled = async (): Promise<TrainResult> => {
    for (const g of gradList) g.fill(0);
    const { dir } = await writeCheckpoint();
    return {
      status: "cancelled",
      precision,
      steps: step,
      finalLoss: lastLoss,
      evalLoss: null,
      adapterDir: dir,
      checkpoints,
    };
  };

  let order: number[] = [];
  let orderEpoch = -1;
  let lastLoss: number | null = null;
  while (step < totalSteps) {
    if (signal?.aborted) return cancelled();
    const epoch = Math.floor(step / stepsPerEpoch);
    if (epoch !== orderEpoch) {
      order = epochOrder(n, settings.seed, epoch);
      orderEpoch = epoch;
    }
    const start = (step % stepsPerEpoch) * samplesPerStep;
    const rows = order.slice(start, Math.min(n, start + samplesPerStep));
    const began = performance.now();
    const sampled = options.sampleCompletions
      ? options.sampleCompletions(rows, step)
      : await sampleGroups(
          generator,
          adapter,
          prompts,
          rows,
          step,
          { ...grpo, maxLength: settings.maxLength, seed: settings.seed },
          signal,
        );
    if (signal?.aborted) return cancelled();
    const generation = seconds(began);
    const scoringBegan = performance.now();
    const items = sampled.map((c) => ({
      row: options.trainSet[c.row],
      rowNumber: rowNumber(c.row),
      completion: c.text,
    }));
    let scored: [number[][], Float64Array];
    try {
      scored = await scoreBatch(options.score, items, rewardNames, rewardWeights, step + 1);
    } catch (error) {
      // Stopped while the scorer was asked (a pause: the trainer's scorer is gone): the steps done are
      // checkpointed, and this one is trained after the resume, on scores that came.
      if (signal?.aborted) return cancelled();
      throw error;
    }
    const [scores, combined] = scored;
    const scoring = seconds(scoringBegan);
    const updateBegan = performance.now();
    const { advantages, zeroGroups } = groupAdvantages(combined, G, grpo.scaleRewards);
    const examples = sampled.map((c) => completionExample(prompts[c.row], c.tokenIds));
    let batchTokens = 0;
    let batchKept = 0;
    sampled.forEach((c, i) => {
      if (zeroGroups[Math.floor(i / G)]) return;
      batchTokens += c.tokenIds.length;
      batchKept++;
    });
    let loss = 0;
    let klSum = 0;
    let clipped = 0;
    // one micro-batch is B prompts' groups; a zero group adds nothing, so it is not run
    for (let g0 = 0; g0 < zeroGroups.length; g0 += B) {
      if (signal?.aborted) return cancelled();
      const members: number[] = [];
      for (let g = g0; g < Math.min(zeroGroups.length, g0 + B); g++)
        if (!zeroGroups[g]) for (let k = 0; k < G; k++) members.push(g * G + k);
      if (members.length === 0) continue;
      const part = grpoPass(
        members.map((i) => examples[i]),
        members.map((i) => advantages[i]),
        { graph, lora, grads, reference, settings: grpo, pad, batchTokens, batchKept },
      );
      loss += part.loss;
      klSum += part.klSum;
      clipped += part.clippedTokens;
      await nextTick();
    }
    clipGradNorm(gradList, settings.maxGradNorm);
    const learningRate = learningRateAt(
      settings.lrSchedulerType,
      settings.learningRate,
      step,
      settings.warmupSteps,
      totalSteps,
    );
    optimizer.update(gradList, learningRate);
    for (const g of gradList) g.fill(0);
    step++;
    lastLoss = loss;
    const update = seconds(updateBegan);

    const totalTokens = sampled.reduce((sum, c) => sum + c.tokenIds.length, 0);
    const figures = stepRewardFigures(
      items,
      scores,
      combined,
      advantages,
      zeroGroups,
      rewardNames,
      G,
      options.samplesPerStep,
    );
    const metrics: GrpoMetrics = {
      ...figures,
      kl: grpo.beta > 0 ? (batchTokens > 0 ? klSum / batchTokens : 0) : null,
      completionLength: totalTokens / sampled.length,
      clipFraction: batchTokens > 0 ? clipped / batchTokens : 0,
    };
    const elapsed = seconds(began);
    const evalNow = settings.evalSteps !== undefined && step % settings.evalSteps === 0;
    const evalGrpo =
      evalSet && (evalNow || step === totalSteps)
        ? await evaluateGrpo(
            generator,
            adapter,
            evalSet,
            {
              ...grpo,
              numGenerations: grpo.evalGenerations,
              maxLength: settings.maxLength,
              seed: settings.seed,
            },
            { score: options.score, names: rewardNames, weights: rewardWeights },
            step,
            signal,
          )
        : null;
    const progress: GrpoProgress = {
      step,
      totalSteps,
      loss,
      evalLoss: null,
      evalTokenAccuracy: null,
      evalExactMatch: null,
      learningRate,
      epoch: step / stepsPerEpoch,
      tokensPerSecond: elapsed > 0 ? totalTokens / elapsed : 0,
      // the update's forward and backward ran over the prompts and completions of groups with an advantage
      trainedTokens: examples.reduce(
        (sum, e, i) => (zeroGroups[Math.floor(i / G)] ? sum : sum + e.inputIds.length),
        0,
      ),
      grpo: metrics,
      timing: { generation, scoring, update },
      evalGrpo,
    };
    const { samples: _samples, ...logged } = metrics;
    history.push({
      step,
      loss,
      eval_loss: null,
      learning_rate: learningRate,
      epoch: progress.epoch,
      grpo: logged,
      ...(evalGrpo ? { eval_grpo: evalGrpo } : {}),
    } as TrainerState["log_history"][number]);
    await options.onProgress?.(progress);
    if (settings.saveSteps !== undefined && step % settings.saveSteps === 0) await writeCheckpoint();
    await nextTick();
  }
  const finalDir = join(outputDir, "final");
  saveAdapter(adapter, finalDir, adapterBase);
  return {
    status: "completed",
    precision,
    steps: step,
    finalLoss: lastLoss,
    evalLoss: null,
    adapterDir: finalDir,
    checkpoints,
  };
}
