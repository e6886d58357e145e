// Runs one training job inside a worker thread so the server's event loop
// stays free: reads the datasets, loads the base model, calls the engine's
// train() and reports progress, checkpoints and the result as messages.
import { parentPort, workerData } from "node:worker_threads";
import { type DatasetRow, loadModel, readDataset, train } from "@svc/engine";
import type {
  TrainingThreadCommand,
  TrainingThreadInput,
  TrainingThreadMessage,
} from "./training-protocol.js";

const input = workerData as TrainingThreadInput;
const port = parentPort!;
const post = (message: TrainingThreadMessage) => port.postMessage(message);
const controller = new AbortController();
port.on("message", (command: TrainingThreadCommand) => {
  if (command.type === "abort") controller.abort();
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

/** Optimizer steps the run will take (the engine's rule: maxSteps, else epochs × ceil(batches / accumulation)). */
function plannedSteps(examples: number, hp: TrainingThreadInput["hyperparameters"]): number {
  if (typeof hp.maxSteps === "number") return hp.maxSteps;
  const batchSize = hp.batchSize ?? 4;
  const accumulation = hp.gradientAccumulationSteps ?? 1;
  const epochs = hp.numTrainEpochs ?? 1;
  return Math.ceil(Math.ceil(examples / batchSize) / accumulation) * Math.ceil(epochs);
}

async function main(): Promise<void> {
  let lastStep: number | null = null;
  try {
    let trainSet: DatasetRow[] = await readDataset(input.trainPath);
    let evalSet = input.evalPath ? await readDataset(input.evalPath) : undefined;
    if (!evalSet && input.evalFraction) {
      const all = shuffled(trainSet, input.hyperparameters.seed ?? 42);
      const count = Math.min(all.length - 1, Math.max(1, Math.round(all.length * input.evalFraction)));
      if (count >= 1) {
        evalSet = all.slice(0, count);
        trainSet = all.slice(count);
      }
    }
    const model = await loadModel(input.modelDir);
    post({
      type: "started",
      totalSteps: plannedSteps(trainSet.length, input.hyperparameters),
      trainExamples: trainSet.length,
      evalExamples: evalSet?.length ?? 0,
    });
    if (input.dryRun) {
      post({ type: "result", result: null, trainSeconds: 0 });
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
      onProgress: (progress) => {
        lastStep = progress.step;
        post({ type: "progress", progress });
      },
      onCheckpoint: (checkpoint) => post({ type: "checkpoint", step: checkpoint.step, dir: checkpoint.dir }),
    });
    post({ type: "result", result, trainSeconds: (performance.now() - started) / 1000 });
  } catch (error) {
    post({ type: "error", message: (error as Error).message ?? String(error), step: lastStep });
  }
}

await main();
// The message listener would keep this thread alive; the job is over.
port.close();
