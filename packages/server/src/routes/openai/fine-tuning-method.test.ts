import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_JOB_LIMITS, type Job } from "@svc/wire";
import { BASE_LEARNING_RATE } from "./fine-tuning-hyperparameters.js";
import {
  DPO_BASE_LEARNING_RATE,
  fileRefusal,
  methodCheck,
  methodObjectOf,
  svcTraining,
} from "./fine-tuning-method.js";

const check = methodCheck(DEFAULT_JOB_LIMITS);
const jobOf = (method: Job["method"], hyperparameters: Job["hyperparameters"]) =>
  ({ method, hyperparameters }) as Job;

test("a dpo method: beta given rides to the svc job, beta auto is left out, the rate is the multiplier x DPO's base", () => {
  const given = check(
    { type: "dpo", dpo: { hyperparameters: { beta: 0.3, n_epochs: 2, learning_rate_multiplier: 2 } } },
    "method",
  );
  const svc = svcTraining(given, 5, 8, false, DEFAULT_JOB_LIMITS);
  assert.equal(svc.method, "dpo");
  assert.equal(svc.hyperparameters.beta, 0.3);
  assert.equal(svc.hyperparameters.learningRate, 2 * DPO_BASE_LEARNING_RATE);
  assert.equal(svc.hyperparameters.numTrainEpochs, 2);
  assert.ok(DPO_BASE_LEARNING_RATE < BASE_LEARNING_RATE);

  for (const hyperparameters of [{ beta: "auto" }, {}]) {
    const auto = svcTraining(
      check({ type: "dpo", dpo: { hyperparameters } }, "method"),
      5,
      3,
      false,
      DEFAULT_JOB_LIMITS,
    );
    assert.equal("beta" in auto.hyperparameters, false, "the engine's default applies");
    // ...and the job shows the number it trains with: 0.1, batch_size the file's 3 rows, 3 epochs, multiplier 1.
    assert.deepEqual(methodObjectOf(jobOf("dpo", auto.hyperparameters)), {
      type: "dpo",
      dpo: { hyperparameters: { n_epochs: 3, batch_size: 3, learning_rate_multiplier: 1, beta: 0.1 } },
    });
  }
  assert.deepEqual(check({ type: "dpo" }, "method"), { type: "dpo", hyperparameters: {} });
});

test("supervised stays as it was; a job made by svc start reads in OpenAI's terms for its method", () => {
  const svc = svcTraining(check({ type: "supervised" }, "method"), 5, 8, true, DEFAULT_JOB_LIMITS);
  assert.equal(svc.method, undefined);
  assert.equal(svc.hyperparameters.learningRate, BASE_LEARNING_RATE);
  assert.equal(svc.hyperparameters.evalSteps, 2);
  // An svc DPO job at SimPO's default β and a rate of 5e-4: multiplier 5 against DPO's base.
  assert.deepEqual(
    methodObjectOf(jobOf("dpo", { lora: { r: 8, alpha: 16 }, loss: "simpo", learningRate: 5e-4 })),
    {
      type: "dpo",
      dpo: { hyperparameters: { n_epochs: 1, batch_size: 4, learning_rate_multiplier: 5, beta: 2 } },
    },
  );
  assert.equal(methodObjectOf(jobOf("sft", { lora: { r: 8, alpha: 16 } })).type, "supervised");
});

test("refusals name the field: reinforcement without its grader, unknown types list all three, beta ranged", () => {
  const param = (value: unknown): [string, string] => {
    try {
      check(value, "method");
    } catch (error) {
      return [(error as { param?: string }).param ?? "", (error as Error).message];
    }
    assert.fail("not refused");
  };
  assert.match(param({ type: "reinforcement" })[1], /^"method\.reinforcement"/);
  assert.match(param({ type: "kto" })[1], /"supervised", "dpo", "reinforcement"/);
  assert.match(
    param({ type: "dpo", dpo: { hyperparameters: { beta: 101 } } })[1],
    /^"method\.dpo\.hyperparameters\.beta"/,
  );
  assert.match(param({ type: "dpo", supervised: {} })[1], /"method\.supervised"/);
});

test("a file that does not fit the method is invalid_training_file, named by its file- id", () => {
  const id = "0b6f3c1e-1234-4abc-9def-0123456789ab";
  const refusal = fileRefusal(
    "invalid_dataset",
    `"training_file": dataset ${id} holds chat rows`,
    "training_file",
  );
  assert.equal(refusal.code, "invalid_training_file");
  assert.equal(refusal.param, "training_file");
  assert.equal(refusal.message, `"training_file": file file-${id} holds chat rows`);
  assert.equal(fileRefusal("invalid_request", "x", "model").code, "invalid_request");
});
