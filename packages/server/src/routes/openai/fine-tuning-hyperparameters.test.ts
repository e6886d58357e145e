import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_JOB_LIMITS } from "@svc/wire";
import {
  AUTO_EPOCHS,
  BASE_LEARNING_RATE,
  MAX_MULTIPLIER,
  resolveSupervised,
  supervisedOf,
  svcHyperparameters,
} from "./fine-tuning-hyperparameters.js";

test('"auto" and left-out values resolve by the documented rules', () => {
  assert.deepEqual(resolveSupervised({}, 100, DEFAULT_JOB_LIMITS), {
    n_epochs: AUTO_EPOCHS,
    batch_size: 4,
    learning_rate_multiplier: 1,
  });
  // A file with fewer rows than the engine's batch trains on all of them at once.
  assert.equal(resolveSupervised({ batch_size: "auto" }, 3, DEFAULT_JOB_LIMITS).batch_size, 3);
  assert.equal(resolveSupervised({ batch_size: "auto" }, 100, { maxSteps: 10, batchSize: 2 }).batch_size, 2);
  assert.deepEqual(
    resolveSupervised({ n_epochs: 7, batch_size: 2, learning_rate_multiplier: 0.5 }, 9, DEFAULT_JOB_LIMITS),
    {
      n_epochs: 7,
      batch_size: 2,
      learning_rate_multiplier: 0.5,
    },
  );
});

test("svc's hyperparameters: the rate is multiplier x base, a checkpoint (and eval) each epoch, and they read back", () => {
  const resolved = { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 5 };
  const svc = svcHyperparameters(resolved, 7, 10, true, DEFAULT_JOB_LIMITS);
  assert.equal(svc.learningRate, 5 * BASE_LEARNING_RATE);
  assert.equal(svc.numTrainEpochs, 2);
  assert.equal(svc.saveSteps, 3, "10 rows in batches of 4: 3 steps an epoch");
  assert.equal(svc.evalSteps, 3);
  assert.equal(svc.seed, 7);
  assert.equal(svcHyperparameters(resolved, 7, 10, false, DEFAULT_JOB_LIMITS).evalSteps, undefined);
  assert.deepEqual(supervisedOf(svc), resolved);
  assert.equal(svcHyperparameters(resolved, 7, 1000, false, { maxSteps: 50, batchSize: 256 }).saveSteps, 50);
  assert.equal(
    MAX_MULTIPLIER * BASE_LEARNING_RATE,
    1,
    "the largest multiplier meets svc's learning-rate bound",
  );
});

test("a job made without this API reads as the engine's defaults", () => {
  assert.deepEqual(supervisedOf({ lora: { r: 8, alpha: 16 } }), {
    n_epochs: 1,
    batch_size: 4,
    learning_rate_multiplier: 1,
  });
});
