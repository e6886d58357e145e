import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { loadAdapter } from "../adapters/peft.js";
import { parsePreferenceDataset } from "../data/preference-dataset.js";
import { isEngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { createRandomModel } from "../testing/random-model.js";
import type { Model } from "../types.js";
import {
  type PreferenceProgress,
  type PreferenceTrainHyperparameters,
  preparePairSets,
  trainPreference,
} from "./preference-train.js";

let model: Model;
const root = mkdtempSync(join(tmpdir(), "svc-dpo-"));
const pairs = parsePreferenceDataset(
  ["red", "blue", "green", "cat", "dog", "sun"]
    .map((w) => JSON.stringify({ prompt: `say ${w}`, chosen: `${w}!`, rejected: `no ${w} today` }))
    .join("\n"),
);
const hyper: PreferenceTrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj", "o_proj", "down_proj"] },
  maxSteps: 8,
  batchSize: 2,
  gradientAccumulationSteps: 1,
  learningRate: 2e-2,
  seed: 3,
  beta: 0.5,
};

before(async () => {
  await createRandomModel(join(root, "model"), { seed: 11, hiddenSize: 32, numHiddenLayers: 2 });
  model = await loadModel(join(root, "model"));
});

test("DPO raises the preference margin and accuracy; step 1 starts at the reference (loss log 2)", async () => {
  const reports: PreferenceProgress[] = [];
  const result = await trainPreference({
    model,
    trainSet: pairs,
    evalSet: pairs.slice(0, 2),
    hyperparameters: { ...hyper, evalSteps: 4 },
    outputDir: join(root, "run"),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.equal(result.status, "completed");
  assert.deepEqual(
    reports.map((r) => r.step),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  // a fresh adapter (B = 0) is the reference: every reward 0, loss log 2, ties count as half
  assert.ok(Math.abs((reports[0].loss as number) - Math.log(2)) < 1e-6, `${reports[0].loss}`);
  assert.deepEqual(reports[0].preference, { chosenReward: 0, rejectedReward: 0, margin: 0, accuracy: 0.5 });
  const last = reports[7];
  assert.ok((last.loss as number) < Math.log(2) - 0.05, `final loss ${last.loss}`);
  assert.ok(last.preference.margin > 0, `margin ${last.preference.margin}`);
  assert.deepEqual(
    reports.map((r) => r.evalPreference !== null),
    [false, false, false, true, false, false, false, true],
  );
  assert.ok((last.evalPreference?.accuracy ?? 0) > 0.5, JSON.stringify(last.evalPreference));
  assert.equal(last.evalLoss, last.evalPreference?.loss);
  assert.ok(loadAdapter(result.adapterDir).tensors.size > 0);
});

test("resuming from a checkpoint gives the same final adapter as an uninterrupted run", async () => {
  const full = await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: { ...hyper, maxSteps: 4 },
    outputDir: join(root, "full"),
  });
  const first = await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: { ...hyper, maxSteps: 4, saveSteps: 2 },
    outputDir: join(root, "first"),
  });
  const resumed = await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: { ...hyper, maxSteps: 4 },
    outputDir: join(root, "resumed"),
    resumeFrom: first.checkpoints[0].dir,
  });
  assert.equal(resumed.steps, 4);
  const a = loadAdapter(full.adapterDir).tensors;
  const b = loadAdapter(resumed.adapterDir).tensors;
  for (const [name, t] of a) assert.deepEqual(b.get(name), t, name);
});

test("from a start adapter the policy is a trainable copy of it and the reference that adapter, frozen", async () => {
  // the start adapter: a short run from the base, whose margin is far from 0 under the base as reference
  const first: PreferenceProgress[] = [];
  const start = await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: { ...hyper, maxSteps: 4 },
    outputDir: join(root, "start"),
    onProgress: (p) => {
      first.push(p);
    },
  });
  assert.ok(first[3].preference.margin > 0.1, `start run margin ${first[3].preference.margin}`);
  const reports: PreferenceProgress[] = [];
  const from = (
    outputDir: string,
    extra: Partial<PreferenceTrainHyperparameters> = {},
    resumeFrom?: string,
  ) =>
    trainPreference({
      model,
      trainSet: pairs,
      hyperparameters: { ...hyper, maxSteps: 4, ...extra },
      outputDir: join(root, outputDir),
      startAdapter: start.adapterDir,
      resumeFrom,
      onProgress: (p) => {
        reports.push(p);
      },
    });
  // step 1: the policy is the start adapter and so is the reference: every reward 0, loss log 2
  const tiny = await from("from-tiny", { maxSteps: 1, learningRate: 1e-12 });
  assert.ok(Math.abs((reports[0].loss as number) - Math.log(2)) < 1e-6, `${reports[0].loss}`);
  assert.deepEqual(reports[0].preference, { chosenReward: 0, rejectedReward: 0, margin: 0, accuracy: 0.5 });
  // the policy started from the start adapter's weights (a step of lr 1e-12 leaves them)
  const startTensors = loadAdapter(start.adapterDir).tensors;
  for (const [name, t] of loadAdapter(tiny.adapterDir).tensors) {
    const want = startTensors.get(name) as Float32Array;
    const gap = t.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i])), 0);
    assert.ok(gap < 1e-6, `${name} moved ${gap} from the start adapter`);
  }
  // it trains, and the reference stays the start adapter on resume: same final adapter as in one go
  reports.length = 0;
  const more = { maxSteps: 8, learningRate: 5e-3 };
  const full = await from("from-full", more);
  const late = ((reports[6].loss as number) + (reports[7].loss as number)) / 2;
  assert.ok(late < Math.log(2) - 0.05, `loss of steps 7-8 ${late}`);
  const part = await from("from-part", { ...more, saveSteps: 4 });
  const resumed = await from("from-resumed", more, part.checkpoints[0].dir);
  const a = loadAdapter(full.adapterDir).tensors;
  const b = loadAdapter(resumed.adapterDir).tensors;
  for (const [name, t] of a) assert.deepEqual(b.get(name), t, name);
});

test("SimPO trains without a reference and raises its margin", async () => {
  const reports: PreferenceProgress[] = [];
  await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: { ...hyper, loss: "simpo", beta: 2, gamma: 0.5 },
    outputDir: join(root, "simpo"),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.ok(
    reports[7].preference.margin > reports[0].preference.margin,
    JSON.stringify(reports.map((r) => r.preference.margin)),
  );
});

test("a cancelled run stops with a checkpoint of the last full step", async () => {
  const controller = new AbortController();
  const result = await trainPreference({
    model,
    trainSet: pairs,
    hyperparameters: hyper,
    outputDir: join(root, "cancel"),
    signal: controller.signal,
    onProgress: (p) => {
      if (p.step === 2) controller.abort();
    },
  });
  assert.equal(result.status, "cancelled");
  assert.equal(result.steps, 2);
});

test("bad settings and rows too long are refused naming the field or row", () => {
  assert.throws(
    () => preparePairSets(model.tokenizer, pairs, undefined, { ...hyper, lossOn: "all" }),
    (e: unknown) => isEngineError(e) && /lossOn must be "assistant"/.test(e.message),
  );
  assert.throws(
    () => preparePairSets(model.tokenizer, pairs, undefined, { ...hyper, beta: -1 }),
    (e: unknown) => isEngineError(e) && /hyperparameters\.beta must be a number > 0/.test(e.message),
  );
  const sets = preparePairSets(model.tokenizer, pairs, undefined, {
    ...hyper,
    maxLength: 36,
    truncation: "keep_answers",
  });
  assert.equal(sets.train.pairs.length + sets.train.dropped.length, pairs.length);
  assert.ok(sets.train.truncated.length > 0, "keep_answers cut some prompts");
  assert.throws(
    () =>
      preparePairSets(model.tokenizer, pairs, undefined, { ...hyper, maxLength: 36, truncation: "strict" }),
    (e: unknown) =>
      isEngineError(e) && /trainSet row 1 \((chosen|rejected)\): .*truncation "strict"/.test(e.message),
  );
});
