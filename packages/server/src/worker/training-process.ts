// Runs one training job in a child process of the server (forked by the job
// runner), so a crash in the native kernels costs this job's process only:
// reads the datasets, loads the base model, calls the engine's train() and
// reports progress, checkpoints and the result as IPC messages.
import { type DatasetRow, loadModel, plannedSteps, readDataset, train } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
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
    await post({
      type: "started",
      totalSteps: plannedSteps(trainSet.length, input.hyperparameters),
      trainExamples: trainSet.length,
      evalExamples: evalSet?.length ?? 0,
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
