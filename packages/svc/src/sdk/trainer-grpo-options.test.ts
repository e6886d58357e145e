import assert from "node:assert/strict";
import { test } from "node:test";
import type { ScoringBatch } from "@svc/wire";
import { jobRewards, scoreWithRewards } from "./reward-scorer.js";
import { createTrainer } from "./trainer.js";
import { trainerRewards } from "./trainer-grpo-options.js";
import { hyperparametersOf } from "./trainer-options.js";

const grpo = {
  name: "t",
  model: "svc/pico-llama",
  method: "grpo",
  dataset: { type: "file", path: "data/prompts.jsonl" },
} as const;
const GRADER = {
  grader: {
    type: "string_check",
    name: "says",
    operation: "eq",
    input: "{{sample.output_text}}",
    reference: "x",
  },
};

test("rewards are named by key or by function name, weighted by name or order, and stored as names only", () => {
  function length({ completion }: { completion: string }) {
    return completion.length;
  }
  const byKey = { ...grpo, rewards: { a: () => 1, b: () => 2 }, rewardWeights: { b: -0.5 } };
  createTrainer(byKey);
  assert.deepEqual(jobRewards(trainerRewards(byKey)), [{ name: "a" }, { name: "b", weight: -0.5 }]);
  const byOrder = { ...grpo, rewards: [length], rewardWeights: [2] };
  createTrainer(byOrder);
  assert.deepEqual(jobRewards(trainerRewards(byOrder)), [{ name: "length", weight: 2 }]);
  assert.deepEqual(
    hyperparametersOf({
      ...grpo,
      graders: [GRADER],
      numGenerations: 4,
      temperature: 0.7,
      beta: 0,
      maxCompletionTokens: 8,
    }),
    { lora: { r: 8, alpha: 16 }, beta: 0, numGenerations: 4, temperature: 0.7, maxCompletionTokens: 8 },
  );
  // evalGenerations (an evalDataset's samples per prompt) goes to the job as the other GRPO settings do
  assert.equal(hyperparametersOf({ ...grpo, graders: [GRADER], evalGenerations: 3 }).evalGenerations, 3);
});

test("bad rewards, weights, graders and GRPO settings are refused at construction, naming the field", () => {
  const refused = (options: Record<string, unknown>, message: RegExp) =>
    assert.throws(() => createTrainer({ ...grpo, ...options } as never), message);
  refused(
    {},
    /createTrainer: rewards: expected reward functions or graders \(method "grpo" needs at least one\)/,
  );
  refused({ rewards: [() => 1] }, /createTrainer: rewards\[0\]: expected a named function/);
  refused(
    { rewards: { "two words": () => 1 } },
    /createTrainer: rewards\.two words: expected a name of a letter/,
  );
  refused({ rewards: { a: 1 } }, /createTrainer: rewards\.a: expected a function, got 1/);
  refused({ rewards: {} }, /createTrainer: rewards: expected 1 to 16 reward functions, got 0/);
  refused(
    { rewards: { says: () => 1 }, graders: [GRADER] },
    /rewards\.says: expected a name no other reward or grader has/,
  );
  refused(
    { rewards: { a: () => 1 }, rewardWeights: [1, 2] },
    /rewardWeights: expected 1 weights \(one per reward\)/,
  );
  refused(
    { rewards: { a: () => 1 }, rewardWeights: { b: 1 } },
    /rewardWeights\.b: expected the name of a reward/,
  );
  refused(
    { rewards: { a: () => 1 }, rewardWeights: { a: 1000 } },
    /rewardWeights\.a: expected a number >= -100 and <= 100/,
  );
  refused({ graders: [{ grader: "x" }] }, /graders\[0\]\.grader: expected an OpenAI grader object/);
  refused(
    { graders: [GRADER], numGenerations: 1 },
    /numGenerations: expected a number >= 2 and <= 64, got 1/,
  );
  // completions per eval prompt (with an evalDataset, docs/post-training.md#grpo-eval)
  refused(
    { graders: [GRADER], evalGenerations: 0 },
    /evalGenerations: expected a number >= 1 and <= 64, got 0/,
  );
  refused(
    { method: "sft", graders: [GRADER] },
    /createTrainer: graders: expected to be left out unless method is "grpo"/,
  );
  refused(
    { method: "dpo", rewards: { a: () => 1 } },
    /createTrainer: rewards: expected to be left out unless method is "grpo"/,
  );
  // No method: svc start --method grpo may train them, so they are checked but allowed.
  createTrainer({ ...grpo, method: undefined, graders: [GRADER] });
});

test("a batch is scored by every reward; one that throws or returns NaN answers an error naming the row and reward", async () => {
  const batch: ScoringBatch = {
    id: "b",
    jobId: "j",
    step: 2,
    rewardNames: ["length", "asks"],
    items: [1, 2].map((rowNumber) => ({
      rowNumber,
      row: { messages: [], color: "red" },
      messages: [{ role: "user", content: "Name red." }],
      prompt: "Name red.",
      completion: "x".repeat(rowNumber),
    })),
    createdAt: "2026-01-01T00:00:00Z",
  };
  const rewards = (asks: (i: { rowNumber: number; step: number }) => number) => [
    { name: "length", weight: 1, fn: ({ completion }: { completion: string }) => completion.length },
    { name: "asks", weight: 1, fn: asks },
  ];
  assert.deepEqual(
    await scoreWithRewards(
      batch,
      rewards(({ step }) => step),
    ),
    {
      rewards: [
        [1, 2],
        [2, 2],
      ],
    },
  );
  const threw = await scoreWithRewards(
    batch,
    rewards(({ rowNumber }) => {
      if (rowNumber === 2) throw new Error("boom");
      return 0;
    }),
  );
  assert.deepEqual(threw, { error: 'row 2: reward "asks" threw: boom; nothing was trained on this step' });
  const nan = await scoreWithRewards(
    batch,
    rewards(({ rowNumber }) => (rowNumber === 2 ? Number.NaN : 0)),
  );
  assert.deepEqual(nan, {
    error:
      'row 2: reward "asks" is NaN; every reward must be a finite number, so nothing was trained on this step',
  });
  const text = await scoreWithRewards(
    batch,
    rewards(() => "1" as never),
  );
  assert.match(
    (text as { error: string }).error,
    /^row 1: reward "asks" is 1; every reward must be a finite number/,
  );
  const other = await scoreWithRewards(batch, rewards(() => 0).slice(0, 1));
  assert.match((other as { error: string }).error, /this trainer has no reward "asks" \(it has length\)/);
});
