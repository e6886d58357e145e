// Runs one training job in a child process of the server (forked by the job
// runner), so a crash in the native kernels costs this job's process only:
// reads the datasets and the base model (training-sets.ts), calls the engine's train() and
// reports progress, checkpoints and the result as IPC messages.
import { train } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import { postToRunner as post, trainingInput } from "./training-protocol.js";
import { readTrainingSets } from "./training-sets.js";

exitWithParent();
const controller = new AbortController();
const input = await trainingInput(() => controller.abort());

async function main(): Promise<void> {
  let lastStep: number | null = null;
  try {
    const { model, trainSet, evalSet, prepared, started: report } = await readTrainingSets(input);
    await post(report);
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
      baseModelName: input.baseModelName,
      baseModelRevision: input.baseModelRevision,
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
