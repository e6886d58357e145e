import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_JOB_LIMITS, type Job } from "@svc/wire";
import { methodCheck, methodObjectOf, svcTraining } from "./fine-tuning-method.js";
import { GRPO_BASE_LEARNING_RATE, graderOf } from "./fine-tuning-reinforcement.js";

const check = methodCheck(DEFAULT_JOB_LIMITS);
const GRADER = {
  type: "string_check",
  name: "answer",
  operation: "eq",
  input: "{{sample.output_text}}",
  reference: "{{item.answer}}",
};
const param = (value: unknown): string => {
  try {
    check(value, "method");
  } catch (error) {
    return (error as { param?: string }).param ?? /^"([^"]+)"/.exec((error as Error).message)?.[1] ?? "";
  }
  assert.fail("not refused");
};

test("a reinforcement method is a grpo job with its grader at weight 1; compute_multiplier scales the group of 8", () => {
  const requested = check(
    {
      type: "reinforcement",
      reinforcement: { grader: GRADER, hyperparameters: { compute_multiplier: 0.5, n_epochs: 2 } },
    },
    "method",
  );
  const svc = svcTraining(requested, 5, 8, false, DEFAULT_JOB_LIMITS);
  assert.equal(svc.method, "grpo");
  assert.deepEqual(svc.graders, [{ grader: GRADER }]);
  assert.equal(svc.hyperparameters.numGenerations, 4);
  assert.equal(svc.hyperparameters.learningRate, GRPO_BASE_LEARNING_RATE);
  const job = {
    method: "grpo",
    hyperparameters: { ...svc.hyperparameters, graders: svc.graders },
  } as unknown as Job;
  assert.deepEqual(methodObjectOf(job), {
    type: "reinforcement",
    reinforcement: {
      grader: GRADER,
      hyperparameters: { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 1, compute_multiplier: 0.5 },
    },
  });
  // "auto" everywhere: 8 completions per prompt, 3 epochs, the file's rows (or 4) per step.
  const auto = svcTraining(
    check(
      {
        type: "reinforcement",
        reinforcement: { grader: GRADER, hyperparameters: { compute_multiplier: "auto" } },
      },
      "method",
    ),
    5,
    3,
    false,
    DEFAULT_JOB_LIMITS,
  );
  assert.deepEqual(
    [
      auto.hyperparameters.numGenerations,
      auto.hyperparameters.numTrainEpochs,
      auto.hyperparameters.batchSize,
    ],
    [8, 3, 3],
  );
});

test("several weighted svc graders read back as one multi grader summing them", () => {
  const other = { ...GRADER, name: "other", operation: "ne" };
  assert.deepEqual(graderOf([{ grader: GRADER }]), GRADER);
  assert.deepEqual(graderOf([{ grader: GRADER, weight: 2 }, { grader: other }]), {
    type: "multi",
    name: "svc graders",
    graders: { grader_1: GRADER, grader_2: other },
    calculate_output: "2 * grader_1 + 1 * grader_2",
  });
});

test("refusals name the field: the grader's, and what svc cannot honour", () => {
  const rft = (reinforcement: unknown) => ({ type: "reinforcement", reinforcement });
  const hp = "method.reinforcement.hyperparameters";
  assert.equal(param(rft({})), "method.reinforcement.grader");
  assert.equal(
    param(rft({ grader: { ...GRADER, operation: "has" } })),
    "method.reinforcement.grader.operation",
  );
  for (const [field, value] of [
    ["compute_multiplier", 0.1],
    ["compute_multiplier", 0.3],
    ["reasoning_effort", "medium"],
    ["beta", 0.1],
  ] as const)
    assert.equal(param(rft({ grader: GRADER, hyperparameters: { [field]: value } })), `${hp}.${field}`);
  // eval_interval and eval_samples are numbers svc honours, but only with a validation_file to evaluate.
  for (const field of ["eval_interval", "eval_samples"]) {
    const method = check(rft({ grader: GRADER, hyperparameters: { [field]: 2 } }), "method");
    assert.throws(
      () => svcTraining(method, 5, 8, false, DEFAULT_JOB_LIMITS),
      (error: Error & { param?: string }) =>
        error.param === `${hp}.${field}` && /give one/.test(error.message),
    );
    assert.equal(svcTraining(method, 5, 8, true, DEFAULT_JOB_LIMITS).method, "grpo");
  }
});
