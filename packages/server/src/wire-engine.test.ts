// The wire (@svc/wire) carries the allowed values of options whose meaning the
// engine owns, so the server's routes, the SDK and Studio check requests
// without importing the engine. This file pins the two copies together: a
// value added to the engine and not to the wire (or the other way) fails here,
// and a type shape that drifts fails the build. Both sides word a list of
// allowed values with their own allowedValues (the engine cannot import the
// wire); the two must give the same words, so a refusal reads the same from
// the SDK, the server and the engine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as engine from "@svc/engine";
import * as wire from "@svc/wire";

/** Compiles only when A and B are the same type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameTypes: [
  Same<wire.TrainingPrecision, engine.TrainingPrecision>,
  Same<wire.BaseWeightFormat, engine.BaseWeightFormat>,
  Same<wire.WeightFormat, engine.WeightFormat>,
  Same<wire.TruncationMode, engine.TruncationMode>,
  Same<wire.LrSchedulerType, engine.LrSchedulerType>,
  Same<wire.PreferenceLoss, engine.PreferenceLossType>,
  Same<wire.ExportFormat, engine.ExportFormat>,
  Same<wire.ToolCall, engine.ToolCall>,
  Same<wire.ToolDefinition, engine.ToolDefinition>,
] = [true, true, true, true, true, true, true, true, true];

test("the wire's allowed values are the engine's", () => {
  assert.deepEqual(sameTypes, [true, true, true, true, true, true, true, true, true]);
  assert.deepEqual([...wire.TRAINING_PRECISIONS], [...engine.TRAINING_PRECISIONS]);
  assert.deepEqual([...wire.BASE_WEIGHT_FORMATS], [...engine.BASE_WEIGHT_FORMATS]);
  assert.deepEqual([...wire.WEIGHT_FORMATS], [...engine.WEIGHT_FORMATS]);
  assert.deepEqual([...wire.TRUNCATION_MODES], [...engine.TRUNCATION_MODES]);
  assert.deepEqual([...wire.LR_SCHEDULER_TYPES], [...engine.LR_SCHEDULER_TYPES]);
  assert.deepEqual([...wire.PREFERENCE_LOSSES], [...engine.PREFERENCE_LOSSES]);
  assert.equal(wire.SAMPLING_RANGES.topLogprobs.max, engine.MAX_TOP_LOGPROBS);
});

test("the wire and the engine word a list of allowed values alike", () => {
  const lists: (readonly string[])[] = [
    [],
    ["int8"],
    ["assistant", "all"],
    wire.TRAINING_PRECISIONS,
    wire.WEIGHT_FORMATS,
    engine.TRUNCATION_MODES,
    engine.LR_SCHEDULER_TYPES,
    engine.GRPO_NORMALIZATIONS,
  ];
  for (const list of lists) assert.equal(engine.allowedValues(list), wire.allowedValues(list), list.join());
  assert.equal(engine.allowedValues(engine.LR_SCHEDULER_TYPES), '"linear", "cosine" or "constant"');
});

test("the seed the docs give a job that names none is the engine's default", () => {
  // The wire states no default (defaults stay in the engine); the API's docs do.
  const docs = readFileSync(new URL("../../../../docs/openai-fine-tuning.md", import.meta.url), "utf8");
  const stated = /`seed` its seed \((\d+) by default\)/.exec(docs);
  assert.ok(stated, "docs/openai-fine-tuning.md no longer states the default seed");
  assert.equal(Number(stated[1]), engine.DEFAULT_SEED);
  assert.equal(
    engine.resolveHyperparameters({ lora: { r: 8, alpha: 16, targetModules: ["q_proj"] } }).seed,
    engine.DEFAULT_SEED,
  );
});
