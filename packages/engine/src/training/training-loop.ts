// The optimizer loop every LoRA trainer shares (SFT in train.ts, DPO/SimPO in
// preference-train.ts, GRPO in grpo-train.ts): the adapter and AdamW, resume
// from a checkpoint, each epoch's shuffled order cut into steps, gradient
// accumulation over micro-batches, clipping, the schedule, the eval cadence,
// checkpoints (adapter + trainer_state.json + optimizer moments), cancel,
// progress and tokens/s. A trainer hands in what differs as a TrainingObjective: how one step's examples
// give a loss and gradients, how its eval is computed, and which figures its
// progress events and log_history rows carry. One copy of the loop keeps the
// checkpoint format and the resume rule the same for every method.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { initLoraAdapter, loraLayersOf, loraParams, zerosLike } from "../adapters/lora.js";
import { saveAdapter } from "../adapters/peft.js";
import { ModelGraph } from "../graph/model.js";
import type { LoraLayers } from "../graph/weights.js";
import { getKernels } from "../kernels/index.js";
import { Rng } from "../rng.js";
import type {
  CheckpointInfo,
  LoraAdapter,
  TrainHyperparameters,
  TrainOptions,
  TrainProgress,
  TrainResult,
} from "../types.js";
import { AdamW, clipGradNorm } from "./optim.js";
import { learningRateAt } from "./schedule.js";
import {
  loadStartAdapter,
  restoreCheckpoint,
  type TrainerState,
  writeOptimizerState,
} from "./train-checkpoint.js";
import {
  graphPrecision,
  type ResolvedPrecision,
  resolvePrecision,
  trainingWeights,
} from "./train-precision.js";

/** Hyperparameters with their defaults applied (training/train.ts resolveHyperparameters). */
export type ResolvedHyperparameters = Required<
  Omit<TrainHyperparameters, "maxSteps" | "evalSteps" | "saveSteps">
> &
  Pick<TrainHyperparameters, "maxSteps" | "evalSteps" | "saveSteps">;

/** The order of the training examples in one epoch (a pure function of seed and epoch). */
export function epochOrder(n: number, seed: number, epoch: number): number[] {
  const rng = new Rng((seed ^ Math.imul(epoch + 1, 0x9e3779b9)) >>> 0);
  return rng.shuffle(Array.from({ length: n }, (_, i) => i));
}

export const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The options of a run that the loop itself reads (the rest are the trainer's). */
export type TrainingLoopOptions = Pick<
  TrainOptions,
  | "model"
  | "outputDir"
  | "signal"
  | "precision"
  | "baseWeights"
  | "resumeFrom"
  | "startAdapter"
  | "baseModelName"
  | "baseModelRevision"
  | "onCheckpoint"
>;

/** One run's model state, made by startTrainingRun; the objective reads adapter, lora, grads and graph. */
export interface TrainingRun {
  options: TrainingLoopOptions;
  settings: ResolvedHyperparameters;
  precision: ResolvedPrecision;
  /** training examples (rows, pairs, prompts) that one epoch covers */
  n: number;
  samplesPerStep: number;
  stepsPerEpoch: number;
  totalSteps: number;
  adapter: LoraAdapter;
  lora: LoraLayers;
  /** where a step's backward passes add their gradients */
  grads: LoraLayers;
  graph: ModelGraph;
  optimizer: AdamW;
  gradList: Float32Array[];
  history: TrainerState["log_history"];
  /** optimizer steps done (from the checkpoint when resumed) */
  step: number;
}

/**
 * The adapter (seeded, or startAdapter's weights, or the checkpoint's with its
 * optimizer moments and step when resumeFrom is set), AdamW, and the training
 * graph at the run's precision. totalSteps is plannedSteps(n, hyperparameters).
 */
export function startTrainingRun(
  options: TrainingLoopOptions,
  settings: ResolvedHyperparameters,
  n: number,
  totalSteps: number,
): TrainingRun {
  const precision = resolvePrecision(options.precision, options.baseWeights, getKernels());
  const config = options.model.config;
  const samplesPerStep = settings.batchSize * settings.gradientAccumulationSteps;
  const adapter = initLoraAdapter(config, settings.lora, settings.seed);
  const gradAdapter = zerosLike(adapter);
  const optimizer = new AdamW(loraParams(adapter), {
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
  return {
    options,
    settings,
    precision,
    n,
    samplesPerStep,
    stepsPerEpoch: Math.ceil(n / samplesPerStep),
    totalSteps,
    adapter,
    lora: loraLayersOf(adapter, config),
    grads: loraLayersOf(gradAdapter, config),
    graph: new ModelGraph(
      config,
      trainingWeights(options.model.weights, config, precision),
      graphPrecision(precision),
    ),
    optimizer,
    gradList: loraParams(gradAdapter),
    history,
    step,
  };
}

/** One optimizer step's work, planned by the objective over the step's examples. */
export interface StepPass<F> {
  /** tokens the step trains on (for tokens/s) */
  tokens: number;
  /** micro-batches the step runs; the loop checks the signal before each */
  microBatches: number;
  /** forward and backward of micro-batch k, adding into run.grads (scaled so the step's sum is its mean) */
  microBatch(k: number): void;
  /** after every micro-batch ran: the step's loss and the objective's own figures */
  result(): { loss: number; figures: F };
}

/** The figures every trainer reports for a step. */
export type StepReport = Pick<
  TrainProgress,
  "step" | "totalSteps" | "loss" | "learningRate" | "epoch" | "tokensPerSecond" | "trainedTokens"
>;

/** What differs between trainers: F are a step's own figures, E an eval's, P the progress event. */
export interface TrainingObjective<F, E, P extends TrainProgress> {
  /**
   * Plans the step over `indices` (its slice of epochOrder). A trainer that must
   * do async work first (sampling) may await it here; null means the signal
   * aborted before any gradient was added.
   */
  beginStep(indices: number[]): StepPass<F> | null | Promise<StepPass<F> | null>;
  /** The eval pass (null when aborted part-way); null when the run has no eval set. */
  evaluate: ((signal?: AbortSignal) => Promise<E | null>) | null;
  /** the loss an eval reports as TrainResult.evalLoss; null for an eval that is no loss (GRPO's rewards) */
  evalLoss(evaluation: E): number | null;
  /**
   * The step's progress event and its log_history row, from the shared figures and the objective's.
   * base.tokensPerSecond is the step's tokens over its micro-batches; an objective whose step does
   * more (GRPO samples and scores first) reports its own.
   */
  report(
    base: StepReport,
    figures: F,
    evaluation: E | null,
  ): { progress: P; row: TrainerState["log_history"][number] };
}

/** Saves checkpoint-<step>: the adapter, trainer_state.json and the optimizer moments. */
async function writeCheckpoint(run: TrainingRun, checkpoints: CheckpointInfo[]): Promise<CheckpointInfo> {
  const { options, adapter, step, stepsPerEpoch, samplesPerStep } = run;
  const dir = join(options.outputDir, `checkpoint-${step}`);
  saveAdapter(adapter, dir, adapterBase(options));
  const state: TrainerState = {
    global_step: step,
    total_steps: run.totalSteps,
    epoch: step / stepsPerEpoch,
    seed: run.settings.seed,
    train_examples: run.n,
    samples_per_step: samplesPerStep,
    steps_per_epoch: stepsPerEpoch,
    data_position: {
      epoch: Math.floor(step / stepsPerEpoch),
      offset: (step % stepsPerEpoch) * samplesPerStep,
    },
    lora: { r: adapter.spec.r, alpha: adapter.spec.alpha, target_modules: adapter.spec.targetModules },
    log_history: run.history,
  };
  writeFileSync(join(dir, "trainer_state.json"), `${JSON.stringify(state, null, 2)}\n`);
  writeOptimizerState(join(dir, "optimizer.safetensors"), adapter, run.optimizer);
  const info = { step, dir };
  checkpoints.push(info);
  await options.onCheckpoint?.(info);
  return info;
}

function adapterBase(options: TrainingLoopOptions) {
  return {
    baseModelName: options.baseModelName ?? options.model.dir,
    baseModelRevision: options.baseModelRevision,
  };
}

/**
 * Runs the run's remaining steps. A cancel drops the partial step and saves the
 * last full one as a checkpoint; a completed run saves the adapter as final/.
 */
export async function runTrainingLoop<F, E, P extends TrainProgress>(
  run: TrainingRun,
  objective: TrainingObjective<F, E, P>,
  onProgress?: (progress: P) => void | Promise<void>,
): Promise<TrainResult> {
  const { settings, totalSteps, stepsPerEpoch, samplesPerStep, gradList, n } = run;
  const signal = run.options.signal;
  const checkpoints: CheckpointInfo[] = [];
  let order: number[] = [];
  let orderEpoch = -1;
  let lastLoss: number | null = null;
  let lastEval: number | null = null;
  const finish = (status: TrainResult["status"], adapterDir: string): TrainResult => ({
    status,
    precision: run.precision,
    steps: run.step,
    finalLoss: lastLoss,
    evalLoss: lastEval,
    adapterDir,
    checkpoints,
  });
  const cancel = async () => {
    for (const g of gradList) g.fill(0); // the partial step is dropped; the checkpoint is the last full step
    return finish("cancelled", (await writeCheckpoint(run, checkpoints)).dir);
  };

  while (run.step < totalSteps) {
    // this step's examples: a slice of the epoch's shuffled order
    const epoch = Math.floor(run.step / stepsPerEpoch);
    if (epoch !== orderEpoch) {
      order = epochOrder(n, settings.seed, epoch);
      orderEpoch = epoch;
    }
    const start = (run.step % stepsPerEpoch) * samplesPerStep;
    const pass = await objective.beginStep(order.slice(start, Math.min(n, start + samplesPerStep)));
    if (pass === null) return cancel();
    const started = performance.now();
    for (let k = 0; k < pass.microBatches; k++) {
      if (signal?.aborted) return cancel();
      pass.microBatch(k);
      await nextTick();
    }

    clipGradNorm(gradList, settings.maxGradNorm);
    const learningRate = learningRateAt(
      settings.lrSchedulerType,
      settings.learningRate,
      run.step,
      settings.warmupSteps,
      totalSteps,
    );
    run.optimizer.update(gradList, learningRate);
    for (const g of gradList) g.fill(0);
    const step = ++run.step;
    const { loss, figures } = pass.result();
    lastLoss = loss;
    const seconds = (performance.now() - started) / 1000;

    let evaluation: E | null = null;
    const evalNow = settings.evalSteps !== undefined && step % settings.evalSteps === 0;
    if (objective.evaluate && (evalNow || step === totalSteps)) {
      evaluation = await objective.evaluate(signal);
      if (evaluation !== null) lastEval = objective.evalLoss(evaluation);
    }
    const base: StepReport = {
      step,
      totalSteps,
      loss,
      learningRate,
      epoch: step / stepsPerEpoch,
      tokensPerSecond: seconds > 0 ? pass.tokens / seconds : 0,
      trainedTokens: pass.tokens,
    };
    const { progress, row } = objective.report(base, figures, evaluation);
    run.history.push(row);
    await onProgress?.(progress);
    if (settings.saveSteps !== undefined && step % settings.saveSteps === 0)
      await writeCheckpoint(run, checkpoints);
    await nextTick();
  }

  const finalDir = join(run.options.outputDir, "final");
  saveAdapter(run.adapter, finalDir, adapterBase(run.options));
  return finish("completed", finalDir);
}
