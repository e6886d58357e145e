// Supervised fine-tuning with LoRA: tokenize, shuffle per epoch from the seed,
// run micro-batches (gradient accumulation), clip, AdamW, schedule, evaluate,
// checkpoint, cancel and resume. The data order is a pure function of
// (seed, epoch) and the learning rate of the step number, so a checkpoint that
// holds the adapter, the optimizer moments and the step resumes exactly.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countTargets, countTokens, makeBatch } from "./batching.js";
import { EngineError } from "./errors.js";
import { getKernels } from "./kernels/index.js";
import { initLoraAdapter, loraLayersOf, loraParams, zerosLike } from "./lora.js";
import { type Batch, ModelGraph } from "./model.js";
import { AdamW, clipGradNorm } from "./optim.js";
import { saveAdapter } from "./peft.js";
import { Rng } from "./rng.js";
import { learningRateAt } from "./schedule.js";
import {
  DEFAULT_EXACT_MATCH_MAX_TOKENS,
  DEFAULT_EXACT_MATCH_SAMPLES,
  ExactMatchRunner,
  exactMatchSample,
} from "./task-metrics.js";
import {
  loadStartAdapter,
  restoreCheckpoint,
  type TrainerState,
  writeOptimizerState,
} from "./train-checkpoint.js";
import { resolvePrecision, trainingWeights } from "./train-precision.js";
import { prepareSet, TRUNCATION_MODES } from "./truncation.js";
import type {
  CheckpointInfo,
  DatasetRow,
  LrSchedulerType,
  PreparedSets,
  TokenizedExample,
  Tokenizer,
  TrainHyperparameters,
  TrainOptions,
  TrainProgress,
  TrainResult,
} from "./types.js";
import type { LoraLayers } from "./weights.js";

type Settings = Required<Omit<TrainHyperparameters, "maxSteps" | "evalSteps" | "saveSteps">> &
  Pick<TrainHyperparameters, "maxSteps" | "evalSteps" | "saveSteps">;

/** Hyperparameters with defaults applied; a bad value is an EngineError naming the field. */
export function resolveHyperparameters(h: TrainHyperparameters): Settings {
  const s: Settings = {
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
    seed: h.seed ?? 42,
  };
  const bad = (field: string, want: string, value: unknown) =>
    new EngineError(
      "invalid_argument",
      `hyperparameters.${field} must be ${want} (got ${JSON.stringify(value)})`,
    );
  const positiveInt = (field: keyof Settings, optional = false) => {
    const v = s[field];
    if (optional && v === undefined) return;
    if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw bad(field, "a positive integer", v);
  };
  const nonNegative = (field: keyof Settings) => {
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
  if (!(["linear", "cosine", "constant"] as LrSchedulerType[]).includes(s.lrSchedulerType)) {
    throw bad("lrSchedulerType", '"linear", "cosine" or "constant"', s.lrSchedulerType);
  }
  if (s.lossOn !== "assistant" && s.lossOn !== "all") throw bad("lossOn", '"assistant" or "all"', s.lossOn);
  if (!TRUNCATION_MODES.includes(s.truncation)) {
    throw bad("truncation", '"keep_answers", "end" or "strict"', s.truncation);
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

/** The order of the training examples in one epoch (a pure function of seed and epoch). */
export function epochOrder(n: number, seed: number, epoch: number): number[] {
  const rng = new Rng((seed ^ Math.imul(epoch + 1, 0x9e3779b9)) >>> 0);
  return rng.shuffle(Array.from({ length: n }, (_, i) => i));
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

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
  const precision = resolvePrecision(options.precision, options.baseWeights, getKernels());
  const { model, outputDir, signal } = options;
  const config = model.config;
  const prepared =
    options.prepared ??
    prepareSets(model.tokenizer, options.trainSet, options.evalSet, options.hyperparameters);
  const trainExamples = prepared.train.examples;
  const evalExamples = prepared.eval?.examples ?? [];

  const n = trainExamples.length;
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

  const graph = new ModelGraph(config, trainingWeights(model.weights, config, precision));
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
          config.maxPositionEmbeddings,
        )
      : null;
  let exactMatch: ExactMatchRunner | null = null;
  const checkpoints: CheckpointInfo[] = [];
  const adapterBase = {
    baseModelName: options.baseModelName ?? model.dir,
    baseModelRevision: options.baseModelRevision,
  };
  const writeCheckpoint = async (): Promise<CheckpointInfo> => {
    const dir = join(outputDir, `checkpoint-${step}`);
    saveAdapter(adapter, dir, adapterBase);
    const epoch = Math.floor(step / stepsPerEpoch);
    const state: TrainerState = {
      global_step: step,
      total_steps: totalSteps,
      epoch: step / stepsPerEpoch,
      seed: settings.seed,
      train_examples: n,
      samples_per_step: samplesPerStep,
      steps_per_epoch: stepsPerEpoch,
      data_position: { epoch, offset: (step % stepsPerEpoch) * samplesPerStep },
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
    // this step's examples: a slice of the epoch's shuffled order, in micro-batches of B
    const epoch = Math.floor(step / stepsPerEpoch);
    if (epoch !== orderEpoch) {
      order = epochOrder(n, settings.seed, epoch);
      orderEpoch = epoch;
    }
    const start = (step % stepsPerEpoch) * samplesPerStep;
    const indices = order.slice(start, Math.min(n, start + samplesPerStep));
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
    let stepTokens = 0;
    for (const batch of batches) {
      stepTargets += countTargets(batch);
      stepTokens += countTokens(batch);
    }

    const started = performance.now();
    let lossSum = 0;
    let cancelled = false;
    for (const batch of batches) {
      if (signal?.aborted) {
        cancelled = true;
        break;
      }
      lossSum += graph.forward(batch, lora, 1 / stepTargets).lossSum;
      graph.backward(lora, grads);
      await nextTick();
    }
    if (cancelled) {
      for (const g of gradList) g.fill(0); // the partial step is dropped; the checkpoint is the last full step
      const info = await writeCheckpoint();
      return {
        status: "cancelled",
        precision,
        steps: step,
        finalLoss: lastLoss,
        evalLoss: lastEval,
        adapterDir: info.dir,
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
    lastLoss = lossSum / stepTargets;
    const seconds = (performance.now() - started) / 1000;

    let evalLoss: number | null = null;
    let evalTokenAccuracy: number | null = null;
    let evalExactMatch: number | null = null;
    const evalNow = settings.evalSteps !== undefined && step % settings.evalSteps === 0;
    if (evalExamples.length > 0 && (evalNow || step === totalSteps)) {
      const result = await evaluate(graph, lora, evalExamples, B, pad, signal);
      if (result !== null) {
        evalLoss = lastEval = result.loss;
        evalTokenAccuracy = result.tokenAccuracy;
        if (exactMatchRows) {
          exactMatch ??= new ExactMatchRunner(model, adapter, exactMatchRows, settings.exactMatchMaxTokens);
          evalExactMatch = await exactMatch.run(signal);
        }
      }
    }
    const progress: TrainProgress = {
      step,
      totalSteps,
      loss: lastLoss,
      evalLoss,
      evalTokenAccuracy,
      evalExactMatch,
      learningRate,
      epoch: step / stepsPerEpoch,
      tokensPerSecond: seconds > 0 ? stepTokens / seconds : 0,
    };
    history.push({
      step,
      loss: lastLoss,
      eval_loss: evalLoss,
      eval_token_accuracy: evalTokenAccuracy,
      eval_exact_match: evalExactMatch,
      learning_rate: learningRate,
      epoch: progress.epoch,
    });
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
