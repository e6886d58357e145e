// The torch backend's SVC_TORCH_COMPILE (docs/gpu-training.md#compiled-layers): a value other
// than 0 or 1 is refused with an error event naming it, before the job file is read.
import assert from "node:assert/strict";
import { join } from "node:path";
import { it } from "node:test";
import { needs } from "@svc/engine/testing";
import { hasTorch, runTrainer, TORCH_PYTHON, torchScratch, trainerEvents } from "./torch-harness.js";

it("SVC_TORCH_COMPILE other than 0 or 1 is refused, naming the variable", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, async () => {
  const missing = join(torchScratch("compile-setting"), "no-such-job.json");
  const [run] = await runTrainer(TORCH_PYTHON, missing, { env: { SVC_TORCH_COMPILE: "yes" } });
  assert.equal(run.code, 1, run.err);
  assert.deepEqual(trainerEvents(run.out), [
    { type: "error", message: 'SVC_TORCH_COMPILE must be 0 or 1 (got "yes")', step: null },
  ]);
});
