// A job's training and eval sets as both backends train them: the datasets
// read and validated by the engine, the eval split of evalFraction (seeded, so
// it is the same on every resume), the base model loaded (for the torch
// backend its config and tokenizer only: PyTorch reads the weights), and the
// sets fitted to maxLength, with the "started" report of what was cut and dropped.
import {
  type DatasetRow,
  DEFAULT_SEED,
  loadModel,
  loadTokenizer,
  type Model,
  type ModelConfig,
  type PreferenceRow,
  type PreparedPairSets,
  type PreparedSets,
  plannedSteps,
  preparePairSets,
  prepareSets,
  readDataset,
  readModelConfig,
  readPreferenceDataset,
} from "@svc/engine";
import { ROW_NOTES_SHOWN, type TruncationRowNote } from "@svc/wire";
import {
  engineImplements,
  readRawConfig,
  readTransformersOnlyModel,
} from "../models/transformers-only-model.js";
import type { TrainingProcessInput, TrainingProcessMessage } from "./training-protocol.js";

/**
 * Deterministic shuffle (mulberry32) so a job's eval split is the same on every resume.
 * Not the engine's Rng (xoshiro128**): its sequence differs, and stored jobs' splits
 * depend on this one (packages/wire/README.md#decisions).
 */
function shuffled<T>(rows: T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = rows.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * What the sets need of a model: the torch backend's process never holds the
 * weights in Node, and has no engine config for an architecture the engine
 * does not implement (transformers + peft train it): then config.json's
 * context length stands in.
 */
export type ModelHeader = Pick<Model, "dir" | "tokenizer"> &
  ({ config: ModelConfig } | { config: null; contextLength: number });

export interface TrainingSets<M extends ModelHeader = Model> {
  model: M;
  trainSet: DatasetRow[];
  evalSet: DatasetRow[] | undefined;
  prepared: PreparedSets;
  started: Extract<TrainingProcessMessage, { type: "started" }>;
}

/** The sets with the whole base model loaded (the engine trains it in this process). */
export async function readTrainingSets(input: TrainingProcessInput): Promise<TrainingSets> {
  return prepareTrainingSets(input, () => loadModel(input.modelDir));
}

/** The base model's config and tokenizer only, for the torch backend (PyTorch reads its weights). */
export async function torchModelHeader(input: TrainingProcessInput): Promise<ModelHeader> {
  const tokenizer = await loadTokenizer(input.modelDir);
  const raw = readRawConfig(input.modelDir);
  if (input.torchModel === "transformers" && raw && !engineImplements(raw)) {
    const { contextLength } = readTransformersOnlyModel(input.modelDir, raw);
    return { dir: input.modelDir, tokenizer, config: null, contextLength };
  }
  return { dir: input.modelDir, tokenizer, config: readModelConfig(input.modelDir) };
}

/** The sets with the base model's config and tokenizer only (PyTorch reads its weights). */
export async function readTrainingSetsForTorch(
  input: TrainingProcessInput,
): Promise<TrainingSets<ModelHeader>> {
  return prepareTrainingSets(input, () => torchModelHeader(input));
}

/** The sets of a method "dpo" job: preference pairs, split and fitted as SFT's rows are. */
export interface PreferenceTrainingSets<M extends ModelHeader = Model> {
  model: M;
  trainSet: PreferenceRow[];
  evalSet: PreferenceRow[] | undefined;
  prepared: PreparedPairSets;
  started: Extract<TrainingProcessMessage, { type: "started" }>;
}

/** load: the whole model by default (the engine trains it here), torchModelHeader for the torch backend. */
export async function readPreferenceTrainingSets(
  input: TrainingProcessInput,
): Promise<PreferenceTrainingSets>;
export async function readPreferenceTrainingSets<M extends ModelHeader>(
  input: TrainingProcessInput,
  load: () => Promise<M>,
): Promise<PreferenceTrainingSets<M>>;
export async function readPreferenceTrainingSets(
  input: TrainingProcessInput,
  load: () => Promise<ModelHeader> = () => loadModel(input.modelDir),
): Promise<PreferenceTrainingSets<ModelHeader>> {
  const { trainSet, evalSet, trainNumbers, evalNumbers } = await splitSets(input, readPreferenceDataset);
  const model = await load();
  const prepared = preparePairSets(model.tokenizer, trainSet, evalSet, input.hyperparameters, {
    train: trainNumbers,
    eval: evalNumbers,
  });
  const started = startedReport(
    { train: prepared.train, eval: prepared.eval },
    prepared.train.pairs.length,
    prepared.eval?.pairs.length ?? 0,
    input,
  );
  return { model, trainSet, evalSet, prepared, started };
}

/**
 * The train and eval sets read from their files, the eval set split off by
 * evalFraction when no eval file is given, with the 1-based rows of the file
 * each came from (so truncation notes name a file's row).
 */
async function splitSets<R>(input: TrainingProcessInput, read: (path: string) => Promise<R[]>) {
  const rows = await read(input.trainPath);
  let trainSet: R[] = rows;
  let evalSet = input.evalPath ? await read(input.evalPath) : undefined;
  let trainNumbers: number[] | undefined;
  let evalNumbers: number[] | undefined;
  if (!evalSet && input.evalFraction) {
    const order = shuffled(
      rows.map((_, i) => i),
      // a job naming no seed splits with the one it trains with: the engine's default
      input.hyperparameters.seed ?? DEFAULT_SEED,
    );
    const count = Math.min(order.length - 1, Math.max(1, Math.round(order.length * input.evalFraction)));
    if (count >= 1) {
      evalNumbers = order.slice(0, count).map((i) => i + 1);
      trainNumbers = order.slice(count).map((i) => i + 1);
      evalSet = evalNumbers.map((n) => rows[n - 1]);
      trainSet = trainNumbers.map((n) => rows[n - 1]);
    }
  }
  return { trainSet, evalSet, trainNumbers, evalNumbers };
}

async function prepareTrainingSets<M extends ModelHeader>(
  input: TrainingProcessInput,
  load: () => Promise<M>,
): Promise<TrainingSets<M>> {
  const { trainSet, evalSet, trainNumbers, evalNumbers } = await splitSets<DatasetRow>(input, readDataset);
  const model = await load();
  // Prepared before "started", so the event reports what was cut and dropped; training reuses them.
  const prepared = prepareSets(model.tokenizer, trainSet, evalSet, input.hyperparameters, {
    train: trainNumbers,
    eval: evalNumbers,
  });
  const started = startedReport(
    prepared,
    prepared.train.examples.length,
    prepared.eval?.examples.length ?? 0,
    input,
  );
  return { model, trainSet, evalSet, prepared, started };
}

/** The "started" report: the planned steps, the set sizes, and what truncation cut and dropped. */
function startedReport(
  prepared: Record<"train" | "eval", Pick<PreparedSets["train"], "truncated" | "dropped"> | null>,
  trainExamples: number,
  evalExamples: number,
  input: TrainingProcessInput,
): Extract<TrainingProcessMessage, { type: "started" }> {
  const sets = [
    ["train", prepared.train],
    ["eval", prepared.eval],
  ] as const;
  const notes: TruncationRowNote[] = [];
  let truncatedRows = 0;
  let droppedRows = 0;
  for (const [set, p] of sets) {
    if (!p) continue;
    truncatedRows += p.truncated.length;
    droppedRows += p.dropped.length;
    for (const d of p.dropped) notes.push({ set, row: d.row, action: "dropped", reason: d.reason });
  }
  for (const [set, p] of sets)
    for (const row of p?.truncated ?? []) notes.push({ set, row, action: "truncated" });
  if (droppedRows > 0) {
    const first = notes[0];
    console.warn(
      `svc: ${droppedRows} rows dropped, nothing trained fits in maxLength (first: ${first.set} row ${first.row}: ${first.reason})`,
    );
  }
  return {
    type: "started",
    totalSteps: plannedSteps(trainExamples, input.hyperparameters),
    trainExamples,
    evalExamples,
    truncatedRows,
    droppedRows,
    rowNotes: notes.slice(0, ROW_NOTES_SHOWN),
  };
}
