// A training checkpoint beside the PEFT adapter: trainer_state.json (the step,
// where the data order stands, the log history) and optimizer.safetensors (the
// AdamW moments, named after the adapter tensors they belong to). Together
// they let a run resume to the same weights, bit for bit.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { initLoraAdapter, loraLayersOf } from "../adapters/lora.js";
import { loadAdapter } from "../adapters/peft.js";
import { EngineError } from "../errors.js";
import type { LoraLayers } from "../graph/weights.js";
import { readSafetensors, writeSafetensors } from "../loading/safetensors.js";
import type { LoraAdapter, LoraSpec, ModelConfig } from "../types.js";
import type { AdamW } from "./optim.js";

export interface TrainerState {
  global_step: number;
  total_steps: number;
  epoch: number;
  seed: number;
  train_examples: number;
  samples_per_step: number;
  steps_per_epoch: number;
  /** Where the next step's data starts: the epoch's shuffled order (from seed and epoch) and the offset into it. */
  data_position: { epoch: number; offset: number };
  lora: { r: number; alpha: number; target_modules: string[] };
  log_history: {
    step: number;
    loss: number | null;
    eval_loss: number | null;
    /** The eval pass's task metrics (task-metrics.ts); absent from checkpoints written before they existed. */
    eval_token_accuracy?: number | null;
    eval_exact_match?: number | null;
    learning_rate: number;
    epoch: number;
  }[];
}

function optimizerName(kind: "m" | "v", tensorName: string): string {
  return `${kind}.${tensorName}`;
}

/** The PEFT name of each parameter, in loraParams order. */
function paramNames(adapter: LoraAdapter): string[] {
  return [...adapter.tensors.keys()];
}

export function writeOptimizerState(file: string, adapter: LoraAdapter, optimizer: AdamW): void {
  const names = paramNames(adapter);
  const tensors: [string, { shape: number[]; data: Float32Array }][] = [];
  names.forEach((name, i) => {
    tensors.push([optimizerName("m", name), { shape: [optimizer.m[i].length], data: optimizer.m[i] }]);
    tensors.push([optimizerName("v", name), { shape: [optimizer.v[i].length], data: optimizer.v[i] }]);
  });
  writeSafetensors(file, tensors, { metadata: { step: String(optimizer.step) } });
}

/** Whether two adapters have the same rank, alpha and target modules (so one's tensors fit the other). */
function sameLoraShape(a: LoraAdapter, b: LoraAdapter): boolean {
  return (
    a.spec.r === b.spec.r &&
    a.spec.alpha === b.spec.alpha &&
    [...a.spec.targetModules].sort().join() === [...b.spec.targetModules].sort().join()
  );
}

/**
 * Starts a run from a PEFT adapter (TrainOptions.startAdapter): copies its
 * weights into `adapter`, which must have its shape. Unlike resuming, nothing
 * else carries over: the optimizer is fresh and the run starts at step 0.
 */
export function loadStartAdapter(dir: string, adapter: LoraAdapter): void {
  const saved = loadAdapter(dir);
  if (!sameLoraShape(saved, adapter)) {
    throw new EngineError(
      "invalid_argument",
      `${dir}: the start adapter has LoRA ${JSON.stringify(saved.spec)}, this run has ${JSON.stringify(adapter.spec)}`,
      dir,
    );
  }
  for (const [name, t] of adapter.tensors) t.set(saved.tensors.get(name) as Float32Array);
}

/**
 * A run's reference policy when it starts from an adapter: a second copy of
 * the start adapter, never updated (the run's own adapter is the trainable
 * copy; on resume it comes from the checkpoint, the reference still from here).
 */
export function frozenStartAdapter(
  dir: string,
  config: ModelConfig,
  spec: LoraSpec,
  seed: number,
): LoraLayers {
  const frozen = initLoraAdapter(config, spec, seed);
  loadStartAdapter(dir, frozen);
  return loraLayersOf(frozen, config);
}

export function restoreCheckpoint(
  dir: string,
  adapter: LoraAdapter,
  optimizer: AdamW,
  history: TrainerState["log_history"],
  expect: { n: number; samplesPerStep: number; seed: number },
): number {
  const stateFile = join(dir, "trainer_state.json");
  if (!existsSync(stateFile)) {
    throw new EngineError(
      "missing_file",
      `${stateFile}: not found (resumeFrom must be a checkpoint folder)`,
      stateFile,
    );
  }
  let state: TrainerState;
  try {
    state = JSON.parse(readFileSync(stateFile, "utf8"));
  } catch {
    throw new EngineError("invalid_file", `${stateFile}: not valid JSON`, stateFile);
  }
  const mismatch = (what: string, was: unknown, now: unknown) =>
    new EngineError(
      "invalid_argument",
      `${stateFile}: the checkpoint was made with ${what} ${JSON.stringify(was)}, this run has ${JSON.stringify(now)}`,
      stateFile,
    );
  if (state.train_examples !== expect.n) throw mismatch("train examples", state.train_examples, expect.n);
  if (state.samples_per_step !== expect.samplesPerStep) {
    throw mismatch("batchSize × gradientAccumulationSteps", state.samples_per_step, expect.samplesPerStep);
  }
  if (state.seed !== expect.seed) throw mismatch("seed", state.seed, expect.seed);
  const saved = loadAdapter(dir);
  if (!sameLoraShape(saved, adapter)) throw mismatch("LoRA", saved.spec, adapter.spec);
  for (const [name, t] of adapter.tensors) t.set(saved.tensors.get(name) as Float32Array);

  const optimFile = join(dir, "optimizer.safetensors");
  const moments = readSafetensors(optimFile);
  paramNames(adapter).forEach((name, i) => {
    const m = moments.tensors.get(optimizerName("m", name));
    const v = moments.tensors.get(optimizerName("v", name));
    if (!m || !v || m.data.length !== optimizer.m[i].length || v.data.length !== optimizer.v[i].length) {
      throw new EngineError(
        "invalid_file",
        `${optimFile}: missing or mis-shaped moments for ${name}`,
        optimFile,
      );
    }
    optimizer.m[i].set(m.data);
    optimizer.v[i].set(v.data);
  });
  optimizer.step = Number(moments.metadata.step);
  if (optimizer.step !== state.global_step) {
    throw new EngineError(
      "invalid_file",
      `${optimFile}: optimizer step ${optimizer.step} ≠ global_step ${state.global_step}`,
      optimFile,
    );
  }
  history.push(...state.log_history);
  return state.global_step;
}
