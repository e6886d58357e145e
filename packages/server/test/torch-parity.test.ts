// Backend parity: the same tiny model, data, seed and hyperparameters trained
// by the engine and by the torch backend (packages/trainer-torch on Debian's
// python3-torch, CPU, fp32) give the same first-step loss (1e-5) and an eval
// loss within 2% after 50 steps, on Llama, Qwen3 and Gemma 3; either backend
// resumes the other's checkpoint; and two data-parallel processes (gloo,
// env:// rendezvous as torchrun sets it) take the same first step as one
// process with the same global batch.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  type DatasetRow,
  loadModel,
  type Model,
  prepareSets,
  type TrainHyperparameters,
  train,
} from "@svc/engine";
import { needs } from "@svc/engine/testing";
import { exactMatchScore, type TorchJobFiles, writeTorchJob } from "../src/worker/torch-job.js";
import {
  FIXTURES,
  hasTorch,
  runTrainer,
  TORCH_PYTHON,
  torchScratch,
  trainerEvents,
} from "./torch-harness.js";

const PYTHON = TORCH_PYTHON;
const scratch = torchScratch("parity");

const rows: DatasetRow[] = Array.from({ length: 28 }, (_, i) => ({
  messages: [
    { role: "user", content: `What is ${i} plus ${i % 4}? ${"think ".repeat(i % 3)}` },
    { role: "assistant", content: `${i + (i % 4)}${i % 5 === 0 ? ", of course" : ""}` },
  ],
}));
const trainRows = rows.slice(0, 22);
const evalRows = rows.slice(22);

interface Step {
  step: number;
  loss: number;
  evalLoss: number | null;
  evalExactMatch?: number | null;
  exactMatchIds?: number[][];
}

interface TorchRun {
  steps: Step[];
  checkpoints: { step: number; dir: string }[];
  result: { status: string; adapterDir: string };
}

/** Runs the torch backend's process on a job file (world > 1: that many ranks, as torchrun starts them). */
async function runTorch({ file }: TorchJobFiles, world = 1): Promise<TorchRun> {
  const outputs = await runTrainer(PYTHON, file, { world, masterPort: 29500 + (process.pid % 1000) });
  for (const { rank, code, err } of outputs) if (code !== 0) throw new Error(`rank ${rank}: ${code}\n${err}`);
  const run: TorchRun = { steps: [], checkpoints: [], result: { status: "", adapterDir: "" } };
  for (const event of trainerEvents(outputs[0].out)) {
    if (event.type === "progress") run.steps.push(event.progress);
    else if (event.type === "checkpoint") run.checkpoints.push({ step: event.step, dir: event.dir });
    else if (event.type === "result") run.result = event.result;
  }
  for (const other of outputs.slice(1)) assert.equal(other.out, "", "only rank 0 reports");
  return run;
}

async function runEngine(model: Model, hyperparameters: TrainHyperparameters, resumeFrom?: string) {
  const steps: Step[] = [];
  const outputDir = mkdtempSync(join(scratch, "engine-"));
  const checkpoints: { step: number; dir: string }[] = [];
  await train({
    model,
    trainSet: trainRows,
    evalSet: evalRows,
    hyperparameters,
    outputDir,
    resumeFrom,
    onProgress: (p) =>
      void steps.push({
        step: p.step,
        loss: p.loss as number,
        evalLoss: p.evalLoss ?? null,
        evalExactMatch: p.evalExactMatch ?? null,
      }),
    onCheckpoint: (c) => void checkpoints.push(c),
  });
  return { steps, checkpoints };
}

function jobFor(
  model: Model,
  hyperparameters: TrainHyperparameters,
  extra: { resumeFrom?: string; gradientCheckpointing?: boolean; packing?: boolean } = {},
) {
  return writeTorchJob(mkdtempSync(join(scratch, "job-")), {
    model,
    prepared: prepareSets(model.tokenizer, trainRows, evalRows, hyperparameters),
    hyperparameters,
    outputDir: mkdtempSync(join(scratch, "torch-")),
    resumeFrom: extra.resumeFrom ?? null,
    threads: 1,
    gradientCheckpointing: extra.gradientCheckpointing,
    packing: extra.packing,
  });
}

const hyperparameters = (more: Partial<TrainHyperparameters> = {}): TrainHyperparameters => ({
  lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
  maxSteps: 50,
  batchSize: 4,
  gradientAccumulationSteps: 2,
  learningRate: 5e-3,
  warmupSteps: 5,
  lrSchedulerType: "cosine",
  weightDecay: 0.01,
  evalSteps: 25,
  seed: 11,
  maxLength: 48,
  ...more,
});

const relative = (a: number, b: number) => Math.abs(a - b) / Math.abs(a);

describe("engine and torch backends train the same", {
  skip: !hasTorch && needs("torch", `${PYTHON} has no torch`),
}, () => {
  for (const [family, fixture] of [
    ["Llama", "llama-llama3-v5-f16"],
    ["Qwen3", "qwen3-v5-bf16"],
    ["Gemma 3", "gemma3-v5-f32"],
  ] as const) {
    it(`${family}: the same first-step loss (1e-5) and eval loss within 2% after 50 steps`, async () => {
      const model = await loadModel(join(FIXTURES, fixture));
      const h = hyperparameters();
      const engine = await runEngine(model, h);
      const job = jobFor(model, h);
      const torch = await runTorch(job);
      assert.equal(torch.result.status, "completed");
      assert.deepEqual(
        torch.steps.map((s) => s.step),
        engine.steps.map((s) => s.step),
      );
      const first = Math.abs(engine.steps[0].loss - torch.steps[0].loss);
      assert.ok(
        first < 1e-5,
        `first-step loss: engine ${engine.steps[0].loss}, torch ${torch.steps[0].loss}`,
      );
      const engineEval = engine.steps.at(-1)!.evalLoss as number;
      const torchEval = torch.steps.at(-1)!.evalLoss as number;
      assert.ok(
        relative(engineEval, torchEval) < 0.02,
        `eval loss after 50 steps: engine ${engineEval}, torch ${torchEval}`,
      );
      assert.ok(engineEval < engine.steps[0].loss, "the runs learned something");
      // Exact match: torch generates the engine's sample greedily, the worker scores it with the engine's rule.
      assert.ok(job.exactMatch && job.exactMatch.length > 0, "the eval rows have short answers");
      const answers = torch.steps.at(-1)!.exactMatchIds!;
      const torchExact = exactMatchScore(answers, job.exactMatch, model.tokenizer);
      const engineExact = engine.steps.at(-1)!.evalExactMatch!;
      assert.ok(
        Math.abs((torchExact as number) - engineExact) <= 1 / job.exactMatch.length,
        `evalExactMatch: engine ${engineExact}, torch ${torchExact}`,
      );
    });
  }

  it("resumes each backend's checkpoint on the other, to the same losses", async () => {
    const model = await loadModel(join(FIXTURES, "llama-llama3-v5-f16"));
    const h = hyperparameters({ maxSteps: 20, evalSteps: 20, saveSteps: 10 });
    const engine = await runEngine(model, h);
    const torch = await runTorch(jobFor(model, h));
    const torchAtTen = torch.checkpoints.find((c) => c.step === 10)!;
    const engineAtTen = engine.checkpoints.find((c) => c.step === 10)!;
    // The engine goes on from torch's checkpoint, and torch from the engine's.
    const engineFromTorch = await runEngine(model, h, torchAtTen.dir);
    const torchFromEngine = await runTorch(jobFor(model, h, { resumeFrom: engineAtTen.dir }));
    assert.deepEqual(
      engineFromTorch.steps.map((s) => s.step),
      [11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
    );
    for (const resumed of [engineFromTorch.steps, torchFromEngine.steps]) {
      for (const step of resumed) {
        const whole = engine.steps.find((s) => s.step === step.step)!;
        assert.ok(relative(whole.loss, step.loss) < 1e-3, `step ${step.step}: ${whole.loss} vs ${step.loss}`);
      }
      assert.ok(relative(engine.steps.at(-1)!.evalLoss!, resumed.at(-1)!.evalLoss!) < 0.02);
    }
  });

  it("two data-parallel processes (gloo) take the first step of one process with the same global batch", async () => {
    const model = await loadModel(join(FIXTURES, "qwen3-v5-bf16"));
    const h = hyperparameters({ maxSteps: 3, evalSteps: 3, gradientAccumulationSteps: 1 });
    const single = await runTorch(jobFor(model, h));
    const pair = await runTorch(jobFor(model, h), 2);
    assert.deepEqual(
      pair.steps.map((s) => s.step),
      [1, 2, 3],
    );
    assert.ok(
      Math.abs(single.steps[0].loss - pair.steps[0].loss) < 1e-5,
      `first-step loss: one process ${single.steps[0].loss}, two ${pair.steps[0].loss}`,
    );
    for (let i = 1; i < 3; i++) assert.ok(relative(single.steps[i].loss, pair.steps[i].loss) < 1e-4);
    assert.ok(relative(single.steps[2].evalLoss!, pair.steps[2].evalLoss!) < 1e-4);
  });

  it("gradient checkpointing recomputes activations without changing the training", async () => {
    const model = await loadModel(join(FIXTURES, "gemma3-v5-f32"));
    const h = hyperparameters({ maxSteps: 5, evalSteps: 5 });
    const plain = await runTorch(jobFor(model, h));
    const recomputed = await runTorch(jobFor(model, h, { gradientCheckpointing: true }));
    for (let i = 0; i < 5; i++)
      assert.ok(relative(plain.steps[i].loss, recomputed.steps[i].loss) < 1e-6, `step ${i + 1}`);
    assert.ok(relative(plain.steps[4].evalLoss!, recomputed.steps[4].evalLoss!) < 1e-6);
  });

  for (const fixture of ["gemma3-v5-f32", "phi4-mini-longrope-v5-f16"]) {
    it(`packing sequences into shared rows changes no loss (${fixture})`, async () => {
      const model = await loadModel(join(FIXTURES, fixture));
      // maxLength 96 holds two or three of these rows in one: the micro-batches of 4 pack into fewer rows.
      const h = hyperparameters({ maxSteps: 5, evalSteps: 5, maxLength: 96 });
      const padded = await runTorch(jobFor(model, h));
      const packed = await runTorch(jobFor(model, h, { packing: true }));
      for (let i = 0; i < 5; i++)
        assert.ok(relative(padded.steps[i].loss, packed.steps[i].loss) < 1e-5, `step ${i + 1}`);
      assert.ok(relative(padded.steps[4].evalLoss!, packed.steps[4].evalLoss!) < 1e-5);
    });
  }
});
