// FSDP on the torch backend (svc_trainer/fsdp.py): two gloo processes on the
// CPU, the frozen base sharded between them, train as one process does with
// the same global batch — the same first-step loss (1e-5) and the same final
// adapter, which the engine reads. Needs a Python with PyTorch 2.7 or later
// (SVC_PYTHON, else python3 on the PATH); skipped, saying so, where there is
// none. Debian's torch 1.13 refuses an FSDP job by name; a whole job runs through
// `svc server` and `svc worker --backend torch --device cpu --gpus 2 --fsdp`.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type DatasetRow, loadModel, prepareSets, type TrainHyperparameters } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import { TRAINER_TORCH_DIR, writeTorchJob } from "../src/worker/torch-job.js";
import {
  checkpointSteps,
  FIXTURES,
  findPython,
  framesText,
  largestAdapterDifference,
  runTrainer,
  torchCluster,
  torchScratch,
  trainerEvents,
  trainingLogs,
} from "./torch-harness.js";

const scratch = torchScratch("fsdp");

/** The first interpreter whose torch shards with fully_shard (the trainer's own test), or why none does. */
const found = findPython("from svc_trainer.fsdp import fully_shard_api; fully_shard_api()", "can run FSDP", {
  cwd: TRAINER_TORCH_DIR,
});
const debianTorch =
  spawnSync("/usr/bin/python3", ["-c", "import torch, sys; sys.exit(0 if torch.__version__ < '2' else 1)"])
    .status === 0;

const rows: DatasetRow[] = Array.from({ length: 28 }, (_, i) => ({
  messages: [
    { role: "user", content: `What is ${i} times ${i % 5}? ${"hm ".repeat(i % 4)}` },
    { role: "assistant", content: `${i * (i % 5)}` },
  ],
}));

interface Run {
  losses: number[];
  evalLoss: number | null;
  adapterDir: string | null;
  error: string | null;
}

async function runTorch(
  python: string,
  hyperparameters: TrainHyperparameters,
  world: number,
  fsdp: boolean,
  more: { gradientCheckpointing?: boolean; packing?: boolean } = {},
) {
  const model = await loadModel(join(FIXTURES, "qwen3-v5-bf16"));
  const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
    model,
    prepared: prepareSets(model.tokenizer, rows.slice(0, 22), rows.slice(22), hyperparameters),
    hyperparameters,
    outputDir: mkdtempSync(join(scratch, "out-")),
    resumeFrom: null,
    threads: 1,
    fsdp,
    ...more,
  });
  const outputs = await runTrainer(python, file, { world, masterPort: 30500 + (process.pid % 1000) });
  const run: Run = { losses: [], evalLoss: null, adapterDir: null, error: null };
  for (const event of trainerEvents(outputs[0].out)) {
    if (event.type === "progress") {
      run.losses.push(event.progress.loss);
      run.evalLoss = event.progress.evalLoss ?? run.evalLoss;
    } else if (event.type === "result") run.adapterDir = event.result.adapterDir;
    else if (event.type === "error") run.error = event.message;
  }
  for (const other of outputs.slice(1)) assert.equal(other.out, "", "only rank 0 reports");
  return run;
}

// batch 1 × 3 accumulated over 2 ranks: rank 0 runs two micro-batches a step, rank 1 one and an
// empty one; the epoch's last step (22 = 7 × 3 + 1) leaves rank 1 only the empty one.
const hyperparameters: TrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
  maxSteps: 9,
  batchSize: 1,
  gradientAccumulationSteps: 3,
  learningRate: 5e-3,
  warmupSteps: 2,
  lrSchedulerType: "cosine",
  evalSteps: 9,
  seed: 5,
  maxLength: 40,
};

describe("FSDP (torch backend)", () => {
  it("two processes with the base sharded train as one process with the same global batch", {
    skip: found.skip && needs("torch ≥ 2.7", found.skip),
  }, async () => {
    const { python } = found;
    const single = await runTorch(python, hyperparameters, 1, false);
    const sharded = await runTorch(python, hyperparameters, 2, true);
    assert.equal(sharded.error, null);
    assert.equal(sharded.losses.length, 9);
    assert.ok(
      Math.abs(single.losses[0] - sharded.losses[0]) < 1e-5,
      `first-step loss: one process ${single.losses[0]}, FSDP ${sharded.losses[0]}`,
    );
    for (let i = 1; i < 9; i++)
      assert.ok(Math.abs(single.losses[i] - sharded.losses[i]) / single.losses[i] < 1e-4, `step ${i + 1}`);
    assert.ok(Math.abs(single.evalLoss! - sharded.evalLoss!) / single.evalLoss! < 1e-4);
    // The adapter rank 0 wrote is the engine's format and the single process's values.
    const { worst } = largestAdapterDifference(single.adapterDir!, sharded.adapterDir!);
    assert.ok(worst < 1e-4, `largest adapter difference ${worst}`);
  });

  it("combines with gradient checkpointing and packing", {
    skip: found.skip && needs("torch ≥ 2.7", found.skip),
  }, async () => {
    const { python } = found;
    const h = {
      ...hyperparameters,
      maxSteps: 3,
      evalSteps: 3,
      batchSize: 2,
      gradientAccumulationSteps: 2,
      maxLength: 80,
    };
    const single = await runTorch(python, h, 1, false);
    const sharded = await runTorch(python, h, 2, true, { gradientCheckpointing: true, packing: true });
    assert.equal(sharded.error, null);
    for (let i = 0; i < 3; i++)
      assert.ok(Math.abs(single.losses[i] - sharded.losses[i]) / single.losses[i] < 1e-4, `step ${i + 1}`);
  });

  describe("through svc server and svc worker --backend torch --gpus 2 --fsdp (gloo, CPU)", {
    skip: found.skip && needs("torch ≥ 2.7", found.skip),
  }, () => {
    const cluster = torchCluster("torch-fsdp");

    it("trains a job on two sharded processes with the engine's events", async () => {
      const created = await cluster.createTorchJob({ maxSteps: 3, saveSteps: 3 }, { evalFraction: 0.25 });
      await cluster.startWorker(found.python, ["--device", "cpu", "--gpus", "2", "--fsdp"]);
      const frames = await cluster.eventsUntilEnd(created.id, 180_000);
      const events = frames.map((f) => f.event);
      assert.equal(events.at(-2), "training.completed", framesText(frames));
      const logs = trainingLogs(frames);
      assert.deepEqual(
        logs.map((l) => [l.step, l.device]),
        [
          [1, "cpu x2"],
          [2, "cpu x2"],
          [3, "cpu x2"],
        ],
      );
      assert.ok(logs.every((l) => l.loss > 0) && logs.at(-1).evalLoss > 0, JSON.stringify(logs));
      assert.deepEqual(checkpointSteps(frames), [3]);
    });
  });

  it("a PyTorch without fully_shard refuses an FSDP job by name", {
    skip: !debianTorch && needs("torch 1.x", "/usr/bin/python3 has no torch 1.x"),
  }, async () => {
    const run = await runTorch("/usr/bin/python3", hyperparameters, 1, true);
    assert.match(
      run.error ?? "",
      /^FSDP needs PyTorch 2\.7 or later \(fully_shard with ignored_params\); this Python has torch 1\./,
    );
    assert.equal(run.adapterDir, null);
  });
});
