// Preference tuning (DPO, SimPO) with LoRA: train()'s loop (train.ts) with pairs
// for examples and a preference loss (preference-loss.ts, preference-step.ts).
// The same hyperparameters mean the same things: batchSize counts pairs per
// micro-batch, the data order is epochOrder(seed, epoch) over the pairs, the
// schedule, clipping, AdamW, checkpoints (trainer_state.json + optimizer state)
// and resume are train()'s. Each step's loss is the mean over its pairs.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "./errors.js";
import { getKernels } from "./kernels/index.js";
import { initLoraAdapter, loraLayersOf, loraParams, zerosLike } from "./lora.js";
import { ModelGraph } from "./model.js";
import { AdamW, clipGradNorm } from "./optim.js";
import { saveAdapter } from "./peft.js";
import type { PreferenceRow } from "./preference-dataset.js";
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
import { learningRateAt } from "./schedule.js";
import { epochOrder, plannedSteps, resolveHyperparameters } from "./train.js";
import { restoreCheckpoint, type TrainerState, writeOptimizerState } from "./train-checkpoint.js";
import { resolvePrecision, trainingWeights } from "./train-precision.js";
import type {
  CheckpointInfo,
  TrainHyperparameters,
  TrainOptions,
  TrainProgress,
  TrainResult,
} from "./types.js";

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
  // No startAdapter yet: a DPO run from an adapter needs that adapter as its frozen reference, not the base.
  extends Omit<
    TrainOptions,
    "trainSet" | "evalSet" | "hyperparameters" | "prepared" | "onProgress" | "startAdapter"
  > {
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

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function trainPreference(options: PreferenceTrainOptions): Promise<TrainResult> {
  const settings = resolveHyperparameters(options.hyperparameters);
  const preference = resolvePreference(options.hyperparameters);
  const precision = resolvePrecision(options.precision, options.baseWeights, getKernels());
  const { model, outputDir, signal } = options;
  const config = model.config;
  const prepared =
    options.prepared ??
    preparePairSets(model.tokenizer, options.trainSet, options.evalSet, options.hyperparameters);
  const pairs = prepared.train.pairs;
  const evalPairs = prepared.eval?.pairs ?? [];
  const n = pairs.length;
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
  }
  // the reference is this graph with the adapter off: no second copy of the weights
  const graph = new ModelGraph(config, trainingWeights(model.weights, config, precision));
  const reference = new ReferenceLogProbs(n);
  const evalReference = new ReferenceLogProbs(evalPairs.length);
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

  let order: number[] = [];
  let orderEpoch = -1;
  let lastLoss: number | null = null;
  let lastEval: number | null = null;
  while (step < totalSteps) {
    const epoch = Math.floor(step / stepsPerEpoch);
    if (epoch !== orderEpoch) {
      order = epochOrder(n, settings.seed, epoch);
      orderEpoch = epoch;
    }
    const start = (step % stepsPerEpoch) * samplesPerStep;
    const indices = order.slice(start, Math.min(n, start + samplesPerStep));
    const started = performance.now();
    const meter = new PreferenceMeter();
    let tokens = 0;
    let cancelled = false;
    for (let i = 0; i < indices.length; i += B) {
      if (signal?.aborted) {
        cancelled = true;
        break;
      }
      const micro = indices.slice(i, i + B);
      for (const j of micro) tokens += pairs[j].chosen.inputIds.length + pairs[j].rejected.inputIds.length;
      const pass = {
        graph,
        lora,
        grads,
        gradScale: 1 / indices.length,
        settings: preference,
        pad,
        reference,
      };
      for (const l of pairPass(pairs, micro, pass)) meter.add(l);
      await nextTick();
    }
    if (cancelled) {
      for (const g of gradList) g.fill(0);
      const info = await writeCheckpoint();
      const { dir } = info;
      return {
        status: "cancelled",
        precision,
        steps: step,
        finalLoss: lastLoss,
        evalLoss: lastEval,
        adapterDir: dir,
        checkpoints,
      };
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
    const trained = meter.result();
    lastLoss = trained.loss;
    const seconds = (performance.now() - started) / 1000;

    let evalPreference: PreferenceProgress["evalPreference"] = null;
    const evalNow = settings.evalSteps !== undefined && step % settings.evalSteps === 0;
    if (evalPairs.length > 0 && (evalNow || step === totalSteps)) {
      const result = await evaluatePairs(
        evalPairs,
        B,
        { graph, lora, settings: preference, pad, reference: evalReference },
        signal,
      );
      if (result !== null) {
        const { pairs: _, ...figures } = result;
        evalPreference = figures;
        lastEval = result.loss;
      }
    }
    const { loss: _loss, pairs: _pairs, ...figures } = trained;
    const progress: PreferenceProgress = {
      step,
      totalSteps,
      loss: lastLoss,
      evalLoss: evalPreference?.loss ?? null,
      evalTokenAccuracy: null,
      evalExactMatch: null,
      learningRate,
      epoch: step / stepsPerEpoch,
      tokensPerSecond: seconds > 0 ? tokens / seconds : 0,
      preference: figures,
      evalPreference,
    };
    history.push({
      step,
      loss: lastLoss,
      eval_loss: progress.evalLoss,
      learning_rate: learningRate,
      epoch: progress.epoch,
      rewards: figures,
      eval_rewards: evalPreference,
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
    evalLoss: lastEval,
    adapterDir: finalDir,
    checkpoints,
  };
}
