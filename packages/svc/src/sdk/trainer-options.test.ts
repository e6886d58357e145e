import assert from "node:assert/strict";
import { test } from "node:test";
import type { BaseModelInfo } from "@svc/wire";
import { assertLoraTargets, SUPPORTED_MODELS, servedModel } from "./models.js";
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
    () => createTrainer({ ...ok, model: "llama-70b" as never }),
    /model: unsupported base model "llama-70b"; a bundled model \("svc\/pico-llama"\) or a Hugging Face Hub id/,
  );
  assert.throws(() => createTrainer({ ...ok, model: "org/name@../x" as never }), /unsupported base model/);
  // The svc org holds the bundled models only: a typo there is not taken for a Hub id.
  assert.throws(
    () => createTrainer({ ...ok, model: "svc/pico-lama" as never }),
    /unsupported base model "svc\/pico-lama"/,
  );
});

test("Hugging Face Hub ids are base models, with or without a revision", () => {
  assert.equal(
    createTrainer({ ...ok, model: "Qwen/Qwen2.5-0.5B-Instruct" }).model,
    "Qwen/Qwen2.5-0.5B-Instruct",
  );
  assert.equal(
    createTrainer({ ...ok, model: "HuggingFaceTB/SmolLM2-135M@main" }).model,
    "HuggingFaceTB/SmolLM2-135M@main",
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
    [{ lora: { r: 0, alpha: 16 } }, /lora\.r: expected a number >= 1 and <= 1024/],
    [{ learningRate: -1 }, /learningRate: expected a number > 0 and <= 1, got -1/],
    // the API's maxima too, before anything is sent
    [{ learningRate: 2 }, /learningRate: expected a number > 0 and <= 1, got 2/],
    [{ lora: { r: 2048, alpha: 16 } }, /lora\.r: expected a number >= 1 and <= 1024, got 2048/],
    [{ seed: 2 ** 32 }, /seed: expected a number >= 0 and <= 4294967295/],
    [{ exactMatchSamples: 513 }, /exactMatchSamples: expected a number >= 0 and <= 512/],
    [{ lrSchedulerType: "step" }, /lrSchedulerType/],
    [{ truncation: "middle" }, /truncation: expected "keep_answers", "end" or "strict"/],
    [{ callbacks: { onDone: () => {} } }, /callbacks\.onDone/],
    [{ lora: { r: 4, alpha: 8, targetModules: [] } }, /lora\.targetModules: expected a non-empty array/],
    [
      { lora: { r: 4, alpha: 8, targetModules: "q_proj" } },
      /lora\.targetModules: expected a non-empty array/,
    ],
    [{ lora: { r: 4, alpha: 8, targetModules: ["q_proj", 3] } }, /lora\.targetModules: expected/],
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

const phi3: BaseModelInfo = {
  name: "org/phi-3-mini",
  family: "phi3",
  architecture: "Phi3ForCausalLM",
  parameters: 3_821_079_552,
  contextLength: 4096,
  loraTargets: ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"],
  description: "",
  source: "local",
  cached: true,
  revision: null,
  sizeBytes: null,
};

test("lora.targetModules takes any family's PEFT names and reaches the job as given", () => {
  const lora = { r: 4, alpha: 8, targetModules: ["qkv_proj", "gate_up_proj"] };
  const trainer = createTrainer({ ...ok, lora });
  assert.deepEqual(hyperparametersOf({ ...ok, lora }).lora, lora);
  assert.equal(trainer.model, "svc/pico-llama");
});

test("LoRA targets are checked against the model the server describes", () => {
  assertLoraTargets(phi3, ["qkv_proj", "down_proj"]);
  assertLoraTargets(phi3, ["all-linear"]);
  assert.throws(
    () => assertLoraTargets(phi3, ["qkv_proj", "q_proj"]),
    /^TypeError: lora\.targetModules\[1\]: "q_proj" is not a LoRA target of org\/phi-3-mini \(Phi3ForCausalLM\); valid: "qkv_proj", "o_proj", "gate_up_proj", "down_proj", or "all-linear" alone$/,
  );
  assert.throws(
    () => assertLoraTargets(phi3, ["all-linear", "o_proj"]),
    /\[0\]: "all-linear" means every module/,
  );
  assert.equal(servedModel([phi3], "org/phi-3-mini"), phi3);
  // A Hub model the server has not downloaded yet: the server decides at createJob.
  assert.equal(servedModel([phi3], "Qwen/Qwen3-0.6B"), null);
  assert.throws(
    () => servedModel([phi3], "svc/pico-llama"),
    /model: the server does not serve "svc\/pico-llama" \(it serves "org\/phi-3-mini"\)/,
  );
});

test("a Hub dataset names its id and split; its other fields and column mapping are checked", () => {
  const hub = { type: "huggingface", name: "org/ds", split: "train" } as const;
  assert.doesNotThrow(() => createTrainer({ ...ok, dataset: hub }));
  assert.doesNotThrow(() =>
    createTrainer({
      ...ok,
      dataset: {
        ...hub,
        config: "en",
        revision: "v1",
        columns: { prompt: "question", completion: "answer" },
      },
    }),
  );
  const bad: [object, RegExp][] = [
    [{ ...hub, name: "ds" }, /dataset\.name: expected a Hub dataset id "org\/name"/],
    [{ ...hub, split: "" }, /dataset\.split: expected a split name/],
    [
      { ...hub, subset: "en" },
      /dataset\.subset: expected one of type, name, split, config, revision, columns/,
    ],
    [{ ...hub, columns: { answer: "a" } }, /dataset\.columns\.answer: expected one of messages, prompt/],
    [{ ...hub, columns: { prompt: 3 } }, /dataset\.columns\.prompt: expected a column name/],
  ];
  for (const [dataset, re] of bad) assert.throws(() => createTrainer({ ...ok, dataset } as never), re);
});

test('method "dpo": its settings are checked at construction and sent with the job; they need the method', () => {
  const dpo = { ...ok, method: "dpo", beta: 0.2, labelSmoothing: 0.1 } as const;
  assert.equal(createTrainer(dpo).name, "t");
  assert.deepEqual(hyperparametersOf({ ...dpo, loss: "simpo", gamma: 1 }), {
    lora: { r: 8, alpha: 16 },
    beta: 0.2,
    labelSmoothing: 0.1,
    loss: "simpo",
    gamma: 1,
  });
  assert.throws(
    () => createTrainer({ ...ok, method: "ppo" as never }),
    /createTrainer: method: expected "sft", "dpo" or "grpo"/,
  );
  assert.throws(
    () => createTrainer({ ...ok, beta: 0.1 }),
    /createTrainer: beta: expected to be left out unless method is "dpo"/,
  );
  assert.throws(
    () => createTrainer({ ...dpo, beta: 0 }),
    /createTrainer: beta: expected a number > 0 and <= 100, got 0/,
  );
  assert.throws(
    () => createTrainer({ ...dpo, labelSmoothing: 0.6 }),
    /labelSmoothing: expected a number >= 0 and <= 0.5/,
  );
  assert.throws(
    () => createTrainer({ ...dpo, gamma: 1 }),
    /gamma: expected to be set only with loss "simpo"/,
  );
  assert.throws(() => createTrainer({ ...dpo, loss: "ipo" as never }), /loss: expected "sigmoid" or "simpo"/);
});

test('method "dpo" takes inline preference pairs in either form, and refuses chat rows', () => {
  const rows = [
    {
      input: { messages: [{ role: "user" as const, content: "hi" }] },
      preferred_output: [{ role: "assistant" as const, content: "hello" }],
      non_preferred_output: [{ role: "assistant" as const, content: "go" }],
    },
    { prompt: "hi", chosen: "hello", rejected: "go" },
  ];
  assert.equal(createTrainer({ ...ok, method: "dpo", dataset: { type: "inline", rows } }).name, "t");
  const chat = [{ messages: [{ role: "user" as const, content: "hi" }] }];
  assert.throws(
    () => createTrainer({ ...ok, method: "dpo", dataset: { type: "inline", rows: chat } }),
    /dataset\.rows\[0\]: expected \{ input, preferred_output, non_preferred_output \} or \{ prompt, chosen, rejected \}/,
  );
});

test("startAdapter: checked at construction; without lora the job takes the adapter's shape", () => {
  const final = { kind: "final", jobId: "0192f2a4-7b1c-7d3e-8f00-0123456789ab" } as const;
  assert.equal("lora" in hyperparametersOf({ ...ok, startAdapter: final }), false);
  assert.deepEqual(hyperparametersOf({ ...ok, startAdapter: final, lora: { r: 4, alpha: 8 } }).lora, {
    r: 4,
    alpha: 8,
  });
  assert.deepEqual(hyperparametersOf(ok).lora, { r: 8, alpha: 16 });
  assert.throws(() => createTrainer({ ...ok, startAdapter: { kind: "last" } as never }), /startAdapter/);
  assert.throws(
    () => createTrainer({ ...ok, startAdapter: { kind: "final" } as never }),
    /startAdapter\.jobId/,
  );
  assert.throws(
    () => createTrainer({ ...ok, startAdapter: { ...final, kind: "checkpoint", step: 1.5 } }),
    /startAdapter\.step/,
  );
});

test("precision and baseWeights: the engine's values are taken, others refused at construction naming the field", () => {
  for (const precision of ["fp32", "bf16", "auto"] as const)
    assert.equal(createTrainer({ ...ok, precision }).name, "t");
  assert.equal(createTrainer({ ...ok, precision: "bf16", baseWeights: "int8" }).name, "t");
  assert.throws(
    () => createTrainer({ ...ok, precision: "fp16" as never }),
    /createTrainer: precision: expected "fp32", "bf16" or "auto", got "fp16"/,
  );
  assert.throws(() => createTrainer({ ...ok, precision: "BF16" as never }), /precision: expected/);
  assert.throws(
    () => createTrainer({ ...ok, baseWeights: "int4" as never }),
    /createTrainer: baseWeights: expected "int8" or omitted, got "int4"/,
  );
  // Job fields beside the hyperparameters, as POST /v1/jobs takes them.
  const h = hyperparametersOf({ ...ok, precision: "bf16", baseWeights: "int8" });
  assert.equal("precision" in h || "baseWeights" in h, false);
});
