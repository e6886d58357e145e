import assert from "node:assert/strict";
import { test } from "node:test";
import { SUPPORTED_MODELS } from "./models.js";
import { createSvc } from "./svc.js";
import { createTrainer } from "./trainer.js";
import { hyperparametersOf } from "./trainer-options.js";

const ok = {
  name: "t",
  model: "svc/pico-llama",
  dataset: { type: "file", path: "data/train.jsonl" },
} as const;

test("the supported models are the bundled one", () => {
  assert.deepEqual([...SUPPORTED_MODELS], ["svc/pico-llama"]);
});

test("an unsupported model throws at construction, naming the field", () => {
  assert.throws(
    () => createTrainer({ ...ok, model: "meta/llama-70b" as never }),
    /model: unsupported base model "meta\/llama-70b"/,
  );
});

test("SVC_EXTRA_MODELS admits test models at runtime", () => {
  process.env.SVC_EXTRA_MODELS = "test/tiny-random";
  try {
    assert.equal(createTrainer({ ...ok, model: "test/tiny-random" as never }).model, "test/tiny-random");
  } finally {
    delete process.env.SVC_EXTRA_MODELS;
  }
});

test("bad options name their field", () => {
  const bad: [object, RegExp][] = [
    [{ name: "" }, /name: expected a non-empty string/],
    [{ dataset: { type: "ftp" } }, /dataset\.type/],
    [{ dataset: { type: "inline", rows: [] } }, /dataset\.rows/],
    [{ dataset: { type: "url", url: "file:///x" } }, /dataset\.url: expected an http\(s\) URL/],
    [{ lora: { r: 0, alpha: 16 } }, /lora\.r: expected a positive integer/],
    [{ learningRate: -1 }, /learningRate: expected a positive number/],
    [{ lrSchedulerType: "step" }, /lrSchedulerType/],
    [{ truncation: "middle" }, /truncation: expected "keep_answers", "end" or "strict"/],
    [{ callbacks: { onDone: () => {} } }, /callbacks\.onDone/],
  ];
  for (const [patch, re] of bad) assert.throws(() => createTrainer({ ...ok, ...patch } as never), re);
});

test("hyperparameters carry only what was set, with default LoRA", () => {
  assert.deepEqual(hyperparametersOf({ ...ok, maxSteps: 5, seed: 0, truncation: "end" }), {
    lora: { r: 8, alpha: 16 },
    maxSteps: 5,
    seed: 0,
    truncation: "end",
  });
  assert.deepEqual(hyperparametersOf({ ...ok, lora: { r: 4, alpha: 8, maxLength: 64 } }).lora, {
    r: 4,
    alpha: 8,
    maxLength: 64,
  });
});

test("createSvc takes exactly one trainer", () => {
  const trainer = createTrainer(ok);
  assert.equal(createSvc({ trainer }).trainer, trainer);
  assert.throws(() => createSvc({ trainer: [trainer, trainer] as never }), /exactly one trainer/);
  assert.throws(() => createSvc({ trainer, other: trainer } as never), /unknown field "other"/);
  assert.throws(() => createSvc({} as never), /expected the result of createTrainer/);
});
