// Runs one training job in a child process of the server (forked by the job
// runner), so a crash in the native kernels costs this job's process only:
// reads the datasets and the base model (training-sets.ts), calls the engine's train()
// (trainPreference() for method "dpo", trainGrpo() with the job's graders and
// its trainer's rewards for method "grpo") and reports progress, checkpoints and the
// result as IPC messages.
import {
  type CheckpointInfo,
  getKernels,
  type Model,
  resolvePrecision,
  type TrainProgress,
  type TrainResult,
  train,
  trainGrpo,
  trainPreference,
} from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import { combinedScorer, resumedStep, trainerScorer } from "./trainer-rewards.js";
import { graderScorer, readGrpoTrainingSet } from "./training-grpo.js";
import { trainingJudge } from "./training-judge.js";
import { postToRunner, type TrainingProcessMessage, trainingInput } from "./training-protocol.js";
import { readPreferenceTrainingSets, readTrainingSets } from "./training-sets.js";

exitWithParent();
const controller = new AbortController();
const input = await trainingInput(() => controller.abort());

async function main(): Promise<void> {
  let lastStep: number | null = null;
  // A job without a stored precision was made before precisions existed and trained in fp32.
  const { precision = "fp32", baseWeights } = input.hyperparameters;
  // What "auto" becomes on this machine, as train() resolves it, for the training.started event
  // (posted inside the try below, so a value the engine refuses fails the job with its message).
  const post = (message: TrainingProcessMessage) =>
    postToRunner(
      message.type === "started"
        ? { ...message, ...resolvePrecision(precision, baseWeights, getKernels()) }
        : message,
    );
  // What every method's training takes besides the sets.
  const common = (model: Model) => ({
    model,
    hyperparameters: input.hyperparameters,
    precision,
    baseWeights,
    outputDir: input.outputDir,
    signal: controller.signal,
    resumeFrom: input.resumeFrom ?? undefined,
    baseModelName: input.baseModelName,
    baseModelRevision: input.baseModelRevision,
    onProgress: (progress: TrainProgress) => {
      lastStep = progress.step;
      void post({ type: "progress", progress });
    },
    // Awaited, so the checkpoint is reported before training goes on past it.
    onCheckpoint: (checkpoint: CheckpointInfo) =>
      post({ type: "checkpoint", step: checkpoint.step, dir: checkpoint.dir }),
  });
  try {
    let run: () => Promise<TrainResult>;
    if (input.hyperparameters.method === "dpo") {
      const { model, trainSet, evalSet, prepared, started } = await readPreferenceTrainingSets(input);
      await post(started);
      run = () =>
        trainPreference({ ...common(model), trainSet, evalSet, prepared, startAdapter: input.startAdapter });
    } else if (input.hyperparameters.method === "grpo") {
      const { model, trainSet, evalSet, started } = await readGrpoTrainingSet(input);
      const judge = trainingJudge({ model, dir: input.modelDir }, input.judges ?? []);
      const { graders, rewards } = input.hyperparameters;
      const scorer = combinedScorer(
        graders?.length ? graderScorer(graders, judge) : null,
        rewards?.length
          ? trainerScorer(rewards, controller.signal, () => (lastStep ?? resumedStep(input.resumeFrom)) + 1)
          : null,
      );
      await post(started);
      run = () =>
        trainGrpo({ ...common(model), trainSet, evalSet, ...scorer, startAdapter: input.startAdapter });
    } else {
      const { model, trainSet, evalSet, prepared, started } = await readTrainingSets(input);
      await post(started);
      run = () => train({ ...common(model), trainSet, evalSet, prepared, startAdapter: input.startAdapter });
    }
    if (input.dryRun) {
      await post({ type: "result", result: null, trainSeconds: 0 });
      return;
    }
    const started = performance.now();
    const result = await run();
    await post({ type: "result", result, trainSeconds: (performance.now() - started) / 1000 });
  } catch (error) {
    await post({ type: "error", message: (error as Error).message ?? String(error), step: lastStep });
  }
}

await main();
// The IPC channel would keep this process alive; the job is over.
process.disconnect();
