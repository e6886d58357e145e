// What the torch backend's process (packages/trainer-torch) is given for one
// job: the engine's reading of the model (its block description: ModelConfig
// plus the family's checkpoint layout), the examples the engine tokenized and
// fitted to maxLength, the hyperparameters with the engine's defaults applied
// and the engine's planned step count. The Python side decides none of these,
// so dataset validation, truncation, defaults and the step count are the
// engine's by construction (docs/gpu-training.md).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  answersMatch,
  type BaseWeightFormat,
  type ExactMatchRow,
  exactMatchSample,
  FAMILIES,
  type GrpoPrompt,
  type GrpoTrainHyperparameters,
  type ModelConfig,
  type PreferenceTrainHyperparameters,
  type PreparedPairSets,
  type PreparedSet,
  type PreparedSets,
  plannedSteps,
  resolveGrpo,
  resolveHyperparameters,
  resolvePreference,
  type Tokenizer,
  type TrainHyperparameters,
  type TrainingPrecision,
} from "@svc/engine";
import type { TorchModel } from "@svc/wire";
import type { ModelHeader } from "./training-sets.js";

/** packages/trainer-torch (the Python package), from packages/server/dist/src/worker/. */
export const TRAINER_TORCH_DIR = fileURLToPath(new URL("../../../../trainer-torch", import.meta.url));

/** The engine's ModelConfig with its family's layout, as JSON (Float32Arrays as number arrays). */
export function blockDescription(config: ModelConfig): Record<string, unknown> {
  const family = FAMILIES.find((f) => f.name === config.family);
  if (!family) throw new Error(`no family ${config.family}`);
  return {
    ...config,
    ropes: config.ropes.map((rope) => ({
      rotaryDim: rope.rotaryDim,
      invFreq: [...rope.invFreq],
      attentionFactor: rope.attentionFactor,
      ...(rope.long
        ? { long: { invFreq: [...rope.long.invFreq], originalMaxPositions: rope.long.originalMaxPositions } }
        : {}),
    })),
    norms: family.norms,
    normPlusOne: family.normPlusOne,
    modules: family.modules,
  };
}

export interface TorchJobOptions {
  /** The base model's folder, config (none for an architecture the engine does not implement) and tokenizer (its weights are PyTorch's to read). */
  model: ModelHeader;
  prepared: PreparedSets;
  hyperparameters: TrainHyperparameters;
  outputDir: string;
  resumeFrom: string | null;
  /** A PEFT adapter folder whose weights start the run (a job's startAdapter; resumeFrom wins). */
  startAdapter?: string;
  /** Torch's intra-op threads (unset: torch's default). */
  threads?: number;
  /** Recompute each decoder layer's activations in the backward pass, trading compute for memory. */
  gradientCheckpointing?: boolean;
  /** Pack each micro-batch's sequences into rows of up to maxLength tokens: the same losses, less padding. */
  packing?: boolean;
  /** Shard the frozen base across the ranks with FSDP (svc_trainer/fsdp.py). */
  fsdp?: boolean;
  /** "transformers": transformers + peft build the model instead of svc's decoder (svc_trainer/hf.py). */
  torchModel?: TorchModel;
  /**
   * The job's precision, resolved by svc_trainer (svc_trainer/precision.py): "bf16" is a bf16 base under bf16
   * autocast on CUDA and the CPU, "fp32" fp32 everywhere, "auto" (or none) bf16 on CUDA and on a CPU with
   * native bf16 dot products, fp32 elsewhere.
   */
  precision?: TrainingPrecision;
  /** "int8": the frozen projections and LM head held int8 with per-row fp32 scales (svc_trainer/int8.py). */
  baseWeights?: BaseWeightFormat;
  /** Written to the adapters' adapter_config.json: a Hub model's id and commit (default: the model's folder). */
  baseModelName?: string;
  baseModelRevision?: string;
}

/**
 * A set's examples as the torch backend reads them (svc_trainer/tokens.py):
 * little-endian int32 — the count n, n lengths, every example's input ids,
 * then every example's labels.
 */
export function encodeTokens(set: PreparedSet): Buffer {
  const n = set.examples.length;
  let total = 0;
  for (const e of set.examples) total += e.inputIds.length;
  const out = new Int32Array(1 + n + 2 * total);
  out[0] = n;
  let at = 1 + n;
  set.examples.forEach((e, i) => {
    out[1 + i] = e.inputIds.length;
    out.set(e.inputIds, at);
    out.set(e.labels, at + total);
    at += e.inputIds.length;
  });
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** A job written for the torch backend: job.json's path, and the eval rows exact match generates for. */
export interface TorchJobFiles {
  file: string;
  /** The exact-match sample (the engine's), or null when exact match does not run on this job. */
  exactMatch: ExactMatchRow[] | null;
}

/**
 * The engine's exact-match sample for a torch job: Python generates for its
 * prompts, the worker compares the answers (answersMatch). Null when exact
 * match does not run on this job.
 */
export function torchExactMatch(options: Pick<TorchJobOptions, "model" | "prepared" | "hyperparameters">) {
  const { model, prepared } = options;
  const settings = resolveHyperparameters(options.hyperparameters);
  if (settings.lossOn !== "assistant" || !prepared.eval) return null;
  return exactMatchSample(
    prepared.eval.examples,
    model.tokenizer,
    { maxTokens: settings.exactMatchMaxTokens, samples: settings.exactMatchSamples, seed: settings.seed },
    model.config ? model.config.maxPositionEmbeddings : model.contextLength,
  );
}

/** What every method's job.json holds: the model, the settings, the output and the launch options. */
function jobBase(options: Omit<TorchJobOptions, "prepared">, examples: number) {
  const { model } = options;
  return {
    // null for an architecture the engine does not implement: transformers reads config.json itself
    model: model.config && blockDescription(model.config),
    modelDir: model.dir,
    baseModelName: options.baseModelName ?? model.dir,
    baseModelRevision: options.baseModelRevision ?? null,
    padTokenId: model.tokenizer.padTokenId,
    settings: resolveHyperparameters(options.hyperparameters),
    totalSteps: plannedSteps(examples, options.hyperparameters),
    outputDir: options.outputDir,
    resumeFrom: options.resumeFrom,
    ...(options.startAdapter ? { startAdapter: options.startAdapter } : {}),
    ...(options.threads ? { threads: options.threads } : {}),
    ...(options.gradientCheckpointing ? { gradientCheckpointing: true } : {}),
    ...(options.packing ? { packing: true } : {}),
    ...(options.fsdp ? { fsdp: true } : {}),
    ...(options.torchModel === "transformers" ? { torchModel: "transformers" } : {}),
    ...(options.precision ? { precision: options.precision } : {}),
    ...(options.baseWeights ? { baseWeights: options.baseWeights } : {}),
  };
}

function writeJobFile(dir: string, job: Record<string, unknown>): string {
  const file = join(dir, "job.json");
  writeFileSync(file, JSON.stringify(job));
  return file;
}

/** Writes the job (job.json, train.tokens, eval.tokens) into `dir`. */
export function writeTorchJob(dir: string, options: TorchJobOptions): TorchJobFiles {
  const { model, prepared } = options;
  const settings = resolveHyperparameters(options.hyperparameters);
  const exactMatch = torchExactMatch(options);
  const trainTokens = join(dir, "train.tokens");
  writeFileSync(trainTokens, encodeTokens(prepared.train));
  const evalTokens = prepared.eval ? join(dir, "eval.tokens") : null;
  if (prepared.eval && evalTokens) writeFileSync(evalTokens, encodeTokens(prepared.eval));
  const file = writeJobFile(dir, {
    ...jobBase(options, prepared.train.examples.length),
    trainTokens,
    evalTokens,
    exactMatch: exactMatch && {
      prompts: exactMatch.map((row) => row.promptIds),
      maxTokens: settings.exactMatchMaxTokens,
      eosTokenIds: model.tokenizer.eosTokenIds,
    },
  });
  return { file, exactMatch };
}

/** A pair set as a token file: each pair's chosen then its rejected sequence (svc_trainer/dpo.py). */
const pairTokens = (pairs: PreparedPairSets["train"]) =>
  encodeTokens({ examples: pairs.pairs.flatMap((p) => [p.chosen, p.rejected]) } as PreparedSet);

/**
 * A method "dpo" job: the pairs the engine tokenized and fitted (preparePairSets) and the resolved
 * preference settings; svc_trainer's dpo.py computes the engine's loss on them.
 */
export function writeTorchPreferenceJob(
  dir: string,
  options: Omit<TorchJobOptions, "prepared" | "hyperparameters"> & {
    pairs: PreparedPairSets;
    hyperparameters: PreferenceTrainHyperparameters;
  },
): string {
  const { pairs } = options;
  const trainTokens = join(dir, "train.tokens");
  writeFileSync(trainTokens, pairTokens(pairs.train));
  const evalTokens = pairs.eval ? join(dir, "eval.tokens") : null;
  if (pairs.eval && evalTokens) writeFileSync(evalTokens, pairTokens(pairs.eval));
  return writeJobFile(dir, {
    ...jobBase(options, pairs.train.pairs.length),
    method: "dpo",
    preference: resolvePreference(options.hyperparameters),
    trainTokens,
    evalTokens,
  });
}

/**
 * A method "grpo" job: the prompts the engine tokenized (preparePrompts) and the resolved GRPO
 * settings. svc_trainer's grpo.py samples, asks this worker to score (torch-grpo.ts) and updates.
 * fixedCompletions (tests): per step, the completions' token ids in place of sampling.
 */
export function writeTorchGrpoJob(
  dir: string,
  options: Omit<TorchJobOptions, "prepared" | "hyperparameters"> & {
    prompts: GrpoPrompt[];
    /** An eval set's prompts, sampled evalGenerations times each at every eval. */
    evalPrompts?: GrpoPrompt[];
    hyperparameters: GrpoTrainHyperparameters;
    fixedCompletions?: number[][][];
  },
): string {
  return writeJobFile(dir, {
    ...jobBase(options, options.prompts.length),
    method: "grpo",
    grpo: {
      settings: resolveGrpo(options.hyperparameters),
      prompts: options.prompts.map((p) => p.promptIds),
      evalPrompts: (options.evalPrompts ?? []).map((p) => p.promptIds),
      eosTokenIds: options.model.tokenizer.eosTokenIds,
      ...(options.fixedCompletions ? { fixedCompletions: options.fixedCompletions } : {}),
    },
  });
}

/**
 * evalExactMatch from the greedy answers Python generated for the sample (token
 * ids, end of turn left out): decoded and compared with the references by the
 * engine's rule; null when the answers do not line up with the sample.
 */
export function exactMatchScore(
  answers: number[][],
  rows: ExactMatchRow[],
  tokenizer: Tokenizer,
): number | null {
  if (answers.length !== rows.length || rows.length === 0) return null;
  let hits = 0;
  rows.forEach((row, i) => {
    if (answersMatch(tokenizer.decode(answers[i], { skipSpecialTokens: true }), row.reference)) hits++;
  });
  return hits / rows.length;
}
