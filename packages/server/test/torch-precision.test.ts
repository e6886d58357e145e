// A job's precision on the torch backend (docs/training-precision.md#the-torch-backend),
// through `svc server` and `svc worker --backend torch` (python3-torch on the
// CPU): "fp32" and "auto" train, and training.started reports what svc_trainer
// runs (fp32 on the CPU; bf16 autocast is CUDA's, under "auto" only). A job
// asking the torch backend for bf16 or an int8 base: job-precision.test.ts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { needs } from "@svc/engine";
import { completedTorchLogs, framesText, hasTorch, TORCH_PYTHON, torchCluster } from "./torch-harness.js";

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
