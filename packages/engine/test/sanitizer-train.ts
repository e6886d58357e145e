// A short LoRA training run on a random tiny model in a worker thread while the
// main thread decodes with the same base model, so two JS threads call the
// kernels at once (the server's API and training paths). The sanitizer test
// (sanitizers.test.ts) runs it against the ASan/UBSan addon; it is not a test
// file itself.
//
//   node packages/engine/dist/test/sanitizer-train.js [steps]   (default 8)
//
// Exits 0 when training completed with finite losses that fell and the decoder
// kept answering; prints one summary line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { createGenerator } from "../src/generation/generate.js";
import { getKernels } from "../src/kernels/index.js";
import { loadModel } from "../src/loading/load.js";
import { createRandomModel } from "../src/testing/random-model.js";
import { train } from "../src/training/train.js";
import type { DatasetRow } from "../src/types.js";

const facts: [string, string][] = [
  ["sky?", "blue"],
  ["grass?", "green"],
  ["snow?", "white"],
  ["coal?", "black"],
  ["2+2?", "four"],
  ["cat?", "meow"],
];

interface Job {
  modelDir: string;
  outputDir: string;
  steps: number;
}

async function trainInWorker(job: Job): Promise<number[]> {
  const model = await loadModel(job.modelDir);
  // A prompt/completion row renders as one user turn and one assistant turn.
  const trainSet: DatasetRow[] = facts.map(([prompt, completion]) => ({ prompt, completion }));
  const losses: number[] = [];
  const result = await train({
    model,
    trainSet,
    hyperparameters: {
      lora: { r: 8, alpha: 16, targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "down_proj"] },
      maxSteps: job.steps,
      batchSize: 6,
      learningRate: 2e-2,
      lrSchedulerType: "constant",
      seed: 1,
    },
    outputDir: job.outputDir,
    onProgress: (p) => {
      if (p.loss !== null) losses.push(p.loss);
    },
  });
  if (result.status !== "completed") throw new Error(`training ended ${result.status}`);
  return losses;
}

async function main(): Promise<number> {
  const steps = Number(process.argv[2] ?? 8);
  const root = mkdtempSync(join(tmpdir(), "svc-sanitizer-train-"));
  try {
    const modelDir = join(root, "model");
    await createRandomModel(modelDir, {
      seed: 5,
      hiddenSize: 64,
      intermediateSize: 160,
      numHiddenLayers: 2,
      numAttentionHeads: 4,
      numKeyValueHeads: 2,
      tieWordEmbeddings: false,
      embedStd: 1,
      std: 0.2,
    });
    const kernels = getKernels();
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { modelDir, outputDir: join(root, "out"), steps } satisfies Job,
    });
    let losses: number[] | undefined;
    let failure: unknown;
    const finished = new Promise<void>((resolve) => {
      worker.on("message", (m: number[]) => {
        losses = m;
      });
      worker.on("error", (err) => {
        failure = err;
      });
      worker.on("exit", () => resolve());
    });
    // Decode on this thread until training is over (at least once).
    const generator = createGenerator(await loadModel(modelDir));
    let answers = 0;
    let done = false;
    void finished.then(() => {
      done = true;
    });
    do {
      const prompt = `Answer in one word, please: ${facts[answers % facts.length][0]}`;
      await generator.complete({
        messages: [{ role: "user", content: prompt }],
        temperature: 0,
        maxTokens: 8,
      });
      answers++;
    } while (!done);
    await finished;
    if (failure) throw failure;
    if (!losses || losses.length !== steps)
      throw new Error(`expected ${steps} losses, got ${losses?.length}`);
    if (!losses.every(Number.isFinite)) throw new Error(`non-finite loss: ${losses.join(", ")}`);
    const first = losses[0];
    const last = losses[losses.length - 1];
    if (steps >= 4 && !(last < first)) throw new Error(`loss did not fall: ${first} -> ${last}`);
    console.log(
      `sanitizer-train: ${steps} LoRA steps (loss ${first.toFixed(3)} -> ${last.toFixed(3)}) ` +
        `alongside ${answers} decodes, kernels ${kernels.name} ${kernels.isa}`,
    );
    return 0;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (isMainThread) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`sanitizer-train: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
} else {
  trainInWorker(workerData as Job).then((losses) => parentPort!.postMessage(losses));
}
