// A job's precision on the torch backend (docs/training-precision.md#the-torch-backend),
// through `svc server` and `svc worker --backend torch` (python3-torch on the
// CPU): "fp32" and "auto" train, and training.started reports what svc_trainer
// runs (fp32 on the CPU; bf16 autocast is CUDA's, under "auto" only). A job
// asking the torch backend for bf16 or an int8 base: job-precision.test.ts.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadModel, prepareSets } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import { writeTorchJob } from "../src/worker/torch-job.js";
import {
  completedTorchLogs,
  FIXTURES,
  framesText,
  hasTorch,
  TORCH_PYTHON,
  torchCluster,
  torchScratch,
} from "./torch-harness.js";

it('the job file asks svc_trainer for fp32 (dtype) when the job does; "auto" leaves its own rule', async () => {
  const scratch = torchScratch("precision-file");
  const model = await loadModel(join(FIXTURES, "llama-llama3-v5-f16"));
  const rows = [
    {
      messages: [
        { role: "user" as const, content: "hi" },
        { role: "assistant" as const, content: "yo" },
      ],
    },
  ];
  const hyperparameters = { lora: { r: 4, alpha: 8, targetModules: ["all-linear"] }, maxSteps: 1 };
  const dtypeFor = (precision: "fp32" | "auto" | undefined) => {
    const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
      model,
      prepared: prepareSets(model.tokenizer, rows, undefined, hyperparameters),
      hyperparameters,
      outputDir: mkdtempSync(join(scratch, "out-")),
      resumeFrom: null,
      precision,
    });
    return JSON.parse(readFileSync(file, "utf8")).dtype;
  };
  assert.equal(dtypeFor("fp32"), "fp32");
  assert.equal(dtypeFor("auto"), undefined, "svc_trainer's default: bf16 on CUDA, fp32 on the CPU");
  assert.equal(dtypeFor(undefined), undefined);
});

describe("a job's precision on the torch backend", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, () => {
  const cluster = torchCluster("torch-precision");

  it('"fp32" and "auto" jobs train on a CPU torch worker, which reports fp32', async () => {
    await cluster.startWorker(TORCH_PYTHON);
    for (const precision of ["fp32", "auto"] as const) {
      const created = await cluster.createTorchJob({ maxSteps: 2 }, { precision });
      const frames = await cluster.eventsUntilEnd(created.id, 120_000);
      completedTorchLogs(frames, 2);
      const started = JSON.parse(frames[0].data);
      assert.equal(started.precision, "fp32", framesText(frames).slice(0, 2000));
      assert.equal(started.baseWeights, "fp32");
    }
  });
});
