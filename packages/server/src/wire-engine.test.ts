// The wire (@svc/wire) carries the allowed values of options whose meaning the
// engine owns, so the server's routes, the SDK and Studio check requests
// without importing the engine. This file pins the two copies together: a
// value added to the engine and not to the wire (or the other way) fails here,
// and a type shape that drifts fails the build.
import assert from "node:assert/strict";
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
  Same<wire.ToolCall, engine.ToolCall>,
  Same<wire.ToolDefinition, engine.ToolDefinition>,
] = [true, true, true, true, true, true];

test("the wire's allowed values are the engine's", () => {
  assert.deepEqual(sameTypes, [true, true, true, true, true, true]);
  assert.deepEqual([...wire.TRAINING_PRECISIONS], [...engine.TRAINING_PRECISIONS]);
  assert.deepEqual([...wire.BASE_WEIGHT_FORMATS], [...engine.BASE_WEIGHT_FORMATS]);
  assert.deepEqual([...wire.WEIGHT_FORMATS], [...engine.WEIGHT_FORMATS]);
  assert.deepEqual([...wire.TRUNCATION_MODES], [...engine.TRUNCATION_MODES]);
  assert.equal(wire.SAMPLING_RANGES.topLogprobs.max, engine.MAX_TOP_LOGPROBS);
});
