import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { initLoraAdapter, loraLayersOf, loraParams, zerosLike } from "../adapters/lora.js";
import { loadAdapter, saveAdapter } from "../adapters/peft.js";
import { makeBatch } from "../data/batching.js";
import { isEngineError } from "../errors.js";
import { ModelGraph } from "../graph/model.js";
import { loadModel } from "../loading/load.js";
import { Rng } from "../rng.js";
import { createRandomModel } from "../testing/random-model.js";
import type { Model, TokenizedExample } from "../types.js";
import { type CompletionLogProbs, grpoLoss } from "./grpo-objective.js";
import { completionExample, grpoPass, preparePrompts } from "./grpo-step.js";
import { type GrpoProgress, type GrpoTrainHyperparameters, trainGrpo } from "./grpo-train.js";

let model: Model;
const root = mkdtempSync(join(tmpdir(), "svc-grpo-"));
const rows = ["red", "blue", "green", "cat"].map((w) => ({
  messages: [{ role: "user" as const, content: `say ${w}` }],
  word: w,
}));
const hyper: GrpoTrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj", "o_proj", "down_proj"] },
  batchSize: 2,
  gradientAccumulationSteps: 1,
  learningRate: 0.1,
  seed: 5,
  numGenerations: 8,
  maxCompletionTokens: 8,
  temperature: 1,
};
/** The share of a completion's characters that are lowercase ASCII letters. */
const lowercase = (text: string) =>
  text.length === 0 ? 0 : (text.match(/[a-z]/g)?.length ?? 0) / text.length;

before(async () => {
  await createRandomModel(join(root, "model"), {
    seed: 11,
    hiddenSize: 32,
    numHiddenLayers: 2,
    embedStd: 0.2,
  });
  model = await loadModel(join(root, "model"));
});

test("a whole update with fixed completions: grpoPass's adapter gradient matches finite differences of the GRPO loss", () => {
  const config = model.config;
  const adapter = initLoraAdapter(config, hyper.lora!, 1);
  const rng = new Rng(9);
  for (const t of adapter.tensors.values())
    for (let i = 0; i < t.length; i++) t[i] = (rng.next() - 0.5) * 0.2;
  const lora = loraLayersOf(adapter, config);
  const gradAdapter = zerosLike(adapter);
  const grads = loraLayersOf(gradAdapter, config);
  const graph = new ModelGraph(config, model.weights);
  const prompts = preparePrompts(model.tokenizer, rows.slice(0, 2), "trainSet");
  // fixed completions (no sampling): two groups of 3, lengths 2 to 5
  const fixed = [
    [97, 98],
    [99, 100, 101],
    [102, 103, 104, 105],
    [110, 111],
    [112, 113, 114, 115, 116],
    [117, 118, 119],
  ];
  const examples = fixed.map((ids, i) => completionExample(prompts[i < 3 ? 0 : 1], ids));
  const advantages = [1.1, -0.4, -0.7, 0.3, 0.9, -1.2];
  const settings = {
    epsilon: 0.2,
    epsilonHigh: 0.2,
    beta: 0.1,
    scaleRewards: true,
    normalization: "token" as const,
  };
  const batchTokens = fixed.reduce((s, f) => s + f.length, 0);
  const pad = model.tokenizer.padTokenId;
  // one micro-batch per group: the rescaling to the batch's normaliser is exercised
  for (const part of [
    [0, 1, 2],
    [3, 4, 5],
  ])
    grpoPass(
      part.map((i) => examples[i]),
      part.map((i) => advantages[i]),
      {
        graph,
        lora,
        grads,
        reference: null,
        settings,
        pad,
        batchTokens,
        batchKept: 6,
      },
    );
  const logprobs = (lo: typeof lora | null, list: TokenizedExample[]) => {
    const batch = makeBatch(list, pad);
    const rowLoss = new Float32Array(batch.B * batch.T);
    graph.forward(batch, lo, null, rowLoss);
    return list.map((_, b) => {
      const lp: number[] = [];
      for (let t = 0; t < batch.T; t++)
        if (batch.targets[b * batch.T + t] >= 0) lp.push(-rowLoss[b * batch.T + t]);
      return lp;
    });
  };
  const old = logprobs(lora, examples);
  const ref = logprobs(null, examples);
  const lossAt = () => {
    const now = logprobs(lora, examples);
    const c: CompletionLogProbs[] = now.map((lp, i) => ({
      logprobs: lp,
      oldLogprobs: old[i],
      refLogprobs: ref[i],
    }));
    return grpoLoss(
      c,
      advantages,
      c.map(() => true),
      settings,
    ).loss;
  };
  const params = loraParams(adapter);
  const gradList = loraParams(gradAdapter);
  let checked = 0;
  for (let p = 0; p < params.length; p += 3) {
    const values = params[p];
    for (const i of [0, Math.floor(values.length / 2), values.length - 1]) {
      const h = 1e-2;
      const keep = values[i];
      values[i] = keep + h;
      const up = lossAt();
      values[i] = keep - h;
      const down = lossAt();
      values[i] = keep;
      const numeric = (up - down) / (2 * h);
      const analytic = gradList[p][i];
      assert.ok(
        Math.abs(numeric - analytic) <= 2e-3 * Math.max(1, Math.abs(numeric)) + 2e-4,
        `param ${p}[${i}]: finite difference ${numeric}, grpoPass ${analytic}`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 12, `${checked} gradients checked`);
  assert.ok(
    gradList.some((g) => g.some((x) => x !== 0)),
    "the gradient is not all zeros",
  );
});

test("GRPO raises the reward: the share of lowercase letters in the completions climbs", async () => {
  const reports: GrpoProgress[] = [];
  const result = await trainGrpo({
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 40 },
    outputDir: join(root, "run"),
    rewardNames: ["lowercase"],
    score: (batch) => batch.map((item) => [lowercase(item.completion)]),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.equal(result.status, "completed");
  assert.equal(reports.length, 40);
  const mean = (list: GrpoProgress[]) => list.reduce((s, r) => s + r.grpo.reward, 0) / list.length;
  const first = mean(reports.slice(0, 4));
  const last = mean(reports.slice(-4));
  console.log(`mean reward: first 4 steps ${first.toFixed(3)}, last 4 steps ${last.toFixed(3)}`);
  assert.ok(last > first + 0.3, `reward ${first} -> ${last}`);
  const r = reports[0];
  assert.equal(r.grpo.samples.length, 4);
  assert.ok(r.grpo.completionLength > 0 && r.grpo.completionLength <= 8);
  assert.ok(r.grpo.zeroAdvantageFraction >= 0 && r.grpo.zeroAdvantageFraction <= 1);
  assert.equal(r.grpo.kl, null, "beta 0: no reference pass, no KL");
  assert.deepEqual(Object.keys(r.grpo.rewards), ["lowercase"]);
  assert.ok(r.timing.generation > 0 && r.timing.update > 0);
});

test("a NaN reward or a throwing scorer fails the step naming the row and the reward; nothing is trained", async () => {
  const base = {
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 2 },
    rewardNames: ["len", "bad"],
  };
  await assert.rejects(
    trainGrpo({
      ...base,
      outputDir: join(root, "nan"),
      score: (batch) => batch.map((item, i) => [item.completion.length, i === 3 ? Number.NaN : 1]),
    }),
    (error: unknown) =>
      isEngineError(error, "invalid_reward") &&
      /step 1: row \d: reward "bad" is NaN/.test((error as Error).message),
  );
  await assert.rejects(
    trainGrpo({
      ...base,
      outputDir: join(root, "throw"),
      score: () => {
        throw new Error("row 2: grader exploded");
      },
    }),
    (error: unknown) =>
      isEngineError(error, "invalid_reward") &&
      /step 1: scoring failed: row 2: grader exploded/.test((error as Error).message),
  );
  await assert.rejects(
    trainGrpo({ ...base, outputDir: join(root, "shape"), score: (batch) => batch.map(() => [1]) }),
    (error: unknown) =>
      isEngineError(error, "invalid_reward") && /expected 2 \(len, bad\)/.test((error as Error).message),
  );
  await assert.rejects(
    trainGrpo({
      ...base,
      hyperparameters: { ...hyper, maxLength: 8 },
      outputDir: join(root, "long"),
      score: () => [],
    }),
    /trainSet row 1: the prompt has \d+ tokens, and maxLength 8 \(prompt plus completion\) leaves no room/,
  );
  // the first step failed before its update: no adapter and no checkpoint was written
  for (const dir of ["nan", "throw", "shape", "long"]) assert.equal(existsSync(join(root, dir)), false, dir);
});

test("a run resumed from a checkpoint samples and trains as the uninterrupted run did", async () => {
  const base = {
    model,
    trainSet: rows,
    rewardNames: ["lowercase"],
    score: (batch: { completion: string }[]) => batch.map((item) => [lowercase(item.completion)]),
  };
  const full: number[] = [];
  const first = await trainGrpo({
    ...base,
    hyperparameters: { ...hyper, maxSteps: 6, saveSteps: 3 },
    outputDir: join(root, "full"),
    onProgress: (p) => {
      full.push(p.grpo.reward);
    },
  });
  const resumed: number[] = [];
  const second = await trainGrpo({
    ...base,
    hyperparameters: { ...hyper, maxSteps: 6, saveSteps: 3 },
    outputDir: join(root, "resumed"),
    resumeFrom: join(root, "full", "checkpoint-3"),
    onProgress: (p) => {
      resumed.push(p.grpo.reward);
    },
  });
  assert.equal(first.steps, 6);
  assert.equal(second.steps, 6);
  assert.deepEqual(resumed, full.slice(3), "steps 4-6 sample and score the same completions");
  const a = loadAdapter(first.adapterDir);
  const b = loadAdapter(second.adapterDir);
  for (const [name, t] of a.tensors) assert.deepEqual(b.tensors.get(name), t, name);
});

test("from a start adapter: training starts at its weights and, with beta > 0, it is the frozen reference (KL 0 at step 1)", async () => {
  const config = model.config;
  const start = initLoraAdapter(config, hyper.lora!, 2);
  const rng = new Rng(4);
  for (const t of start.tensors.values()) for (let i = 0; i < t.length; i++) t[i] = (rng.next() - 0.5) * 0.2;
  saveAdapter(start, join(root, "start"), { baseModelName: "random" });
  const reports: GrpoProgress[] = [];
  const result = await trainGrpo({
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 3, beta: 0.1 },
    outputDir: join(root, "from-start"),
    startAdapter: join(root, "start"),
    rewardNames: ["lowercase"],
    score: (batch) => batch.map((item) => [lowercase(item.completion)]),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.equal(result.steps, 3);
  // step 1 samples and trains the start adapter itself: the policy is the reference exactly
  assert.equal(reports[0].grpo.kl, 0);
  assert.ok((reports[2].grpo.kl as number) > 0, `KL at step 3 ${reports[2].grpo.kl}`);
  const final = loadAdapter(result.adapterDir);
  let moved = 0;
  for (const [name, t] of start.tensors) {
    const f = final.tensors.get(name) as Float32Array;
    for (let i = 0; i < t.length; i++) moved = Math.max(moved, Math.abs(f[i] - t[i]));
  }
  assert.ok(moved > 0 && moved < 0.5, `the adapter moved from its start by at most ${moved}`);
  await assert.rejects(
    trainGrpo({
      model,
      trainSet: rows,
      hyperparameters: { ...hyper, lora: { ...hyper.lora!, r: 8 }, maxSteps: 1 },
      outputDir: join(root, "bad-start"),
      startAdapter: join(root, "start"),
      score: (batch) => batch.map(() => [0]),
    }),
    /the start adapter has LoRA/,
  );
});

test("a GRPO run stopped while its scorer is asked writes a checkpoint of the steps it trained", async () => {
  const controller = new AbortController();
  let calls = 0;
  const result = await trainGrpo({
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 10 },
    outputDir: join(root, "stopped-scoring"),
    signal: controller.signal,
    // step 3's scorer is stopped before it answers, as the trainer's scorer is when its job pauses
    score: async (batch) => {
      if (++calls < 3) return batch.map(() => [0]);
      controller.abort();
      throw new Error("the job was stopped while waiting for its trainer's scores");
    },
  });
  assert.equal(result.status, "cancelled");
  assert.equal(result.steps, 2);
  assert.equal(result.adapterDir, join(root, "stopped-scoring", "checkpoint-2"));
});

test("a cancelled GRPO run stops at the next step and writes a checkpoint of its last step", async () => {
  const controller = new AbortController();
  const result = await trainGrpo({
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 10 },
    outputDir: join(root, "cancel"),
    signal: controller.signal,
    score: (batch) => batch.map((item) => [lowercase(item.completion)]),
    onProgress: (p) => {
      if (p.step === 2) controller.abort();
    },
  });
  assert.equal(result.status, "cancelled");
  assert.equal(result.steps, 2);
  assert.equal(result.adapterDir, join(root, "cancel", "checkpoint-2"));
  assert.ok(existsSync(join(result.adapterDir, "trainer_state.json")));
});
