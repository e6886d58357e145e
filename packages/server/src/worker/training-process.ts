// Runs one training job in a child process of the server (forked by the job
// runner), so a crash in the native kernels costs this job's process only:
// reads the datasets, loads the base model, calls the engine's train() and
// reports progress, checkpoints and the result as IPC messages.
import { type DatasetRow, loadModel, plannedSteps, prepareSets, readDataset, train } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import { ROW_NOTES_SHOWN, type TruncationRowNote } from "../wire.js";
import type {
  TrainingProcessCommand,
  TrainingProcessInput,
  TrainingProcessMessage,
} from "./training-protocol.js";

exitWithParent();
const controller = new AbortController();
// SIGTERM (a service manager stopping the whole group) checkpoints and stops, as an abort does.
process.on("SIGTERM", () => controller.abort());

/** Sends a message and resolves once it is handed to the IPC channel. */
const post = (message: TrainingProcessMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send?.(message, undefined, {}, () => resolve())) resolve();
  });

const input = await new Promise<TrainingProcessInput>((resolve) => {
  process.on("message", (command: TrainingProcessCommand) => {
    if (command.type === "start") resolve(command.input);
    else if (command.type === "abort") controller.abort();
  });
});

/** Deterministic shuffle (mulberry32) so a job's eval split is the same on every resume. */
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

async function main(): Promise<void> {
  let lastStep: number | null = null;
  try {
    const rows = await readDataset(input.trainPath);
    let trainSet: DatasetRow[] = rows;
    let evalSet = input.evalPath ? await readDataset(input.evalPath) : undefined;
    // 1-based rows of the files the sets came from, so truncation notes name a file's row.
    let trainNumbers: number[] | undefined;
    let evalNumbers: number[] | undefined;
    if (!evalSet && input.evalFraction) {
      const order = shuffled(
        rows.map((_, i) => i),
        input.hyperparameters.seed ?? 42,
      );
      const count = Math.min(order.length - 1, Math.max(1, Math.round(order.length * input.evalFraction)));
      if (count >= 1) {
        evalNumbers = order.slice(0, count).map((i) => i + 1);
        trainNumbers = order.slice(count).map((i) => i + 1);
        evalSet = evalNumbers.map((n) => rows[n - 1]);
        trainSet = trainNumbers.map((n) => rows[n - 1]);
      }
    }
    const model = await loadModel(input.modelDir);
    // Prepared before "started", so the event reports what was cut and dropped; train() reuses them.
    const prepared = prepareSets(model.tokenizer, trainSet, evalSet, input.hyperparameters, {
      train: trainNumbers,
      eval: evalNumbers,
    });
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
    await post({
      type: "started",
      totalSteps: plannedSteps(prepared.train.examples.length, input.hyperparameters),
      trainExamples: prepared.train.examples.length,
      evalExamples: prepared.eval?.examples.length ?? 0,
      truncatedRows,
      droppedRows,
      rowNotes: notes.slice(0, ROW_NOTES_SHOWN),
    });
    if (input.dryRun) {
      await post({ type: "result", result: null, trainSeconds: 0 });
      return;
    }
    const started = performance.now();
    const result = await train({
      model,
      trainSet,
      evalSet,
      hyperparameters: input.hyperparameters,
      outputDir: input.outputDir,
      signal: controller.signal,
      resumeFrom: input.resumeFrom ?? undefined,
      prepared,
      onProgress: (progress) => {
        lastStep = progress.step;
        void post({ type: "progress", progress });
      },
      // Awaited, so the checkpoint is reported before training goes on past it.
      onCheckpoint: (checkpoint) => post({ type: "checkpoint", step: checkpoint.step, dir: checkpoint.dir }),
    });
    await post({ type: "result", result, trainSeconds: (performance.now() - started) / 1000 });
  } catch (error) {
    await post({ type: "error", message: (error as Error).message ?? String(error), step: lastStep });
  }
}

await main();
// The IPC channel would keep this process alive; the job is over.
process.disconnect();
