import assert from "node:assert/strict";
import { test } from "node:test";
import { parseModelConfig } from "../families/index.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { randomModelWeights } from "../testing/random-weights.js";
import { archModel } from "./gguf-arch.js";
import type { GgufValue } from "./gguf-file.js";

const metadataValue = (v: GgufValue | undefined) => (v && "value" in v ? v.value : undefined);

test("the rope bases written are the ones svc computes with, read from the parsed config", () => {
  const classic = {
    ...FAMILY_CONFIGS.gemma3,
    rope_parameters: undefined,
    rope_theta: 1000000,
    rope_scaling: { rope_type: "linear", factor: 8 },
  };
  // Gemma 3's sliding layers default to base 10000 (transformers' rope_local_base_freq), not rope_theta
  for (const [extra, swa] of [
    [{}, 10000],
    [{ rope_local_base_freq: 20000 }, 20000],
  ] as const) {
    const config = parseModelConfig(JSON.parse(JSON.stringify({ ...classic, ...extra })));
    const sliding = config.layers.find((l) => l.window > 0);
    assert.equal(config.ropes[sliding?.rope ?? -1].params.rope_theta, swa);
    const model = archModel(config, randomModelWeights(config), "config.json");
    assert.equal(metadataValue(model.metadata.get("gemma3.rope.freq_base_swa")), swa);
    assert.equal(metadataValue(model.metadata.get("gemma3.rope.freq_base")), 1000000);
    assert.equal(metadataValue(model.metadata.get("gemma3.rope.scaling.type")), "linear");
  }
});

test('the older rope_scaling "type" key and rope_parameters give the same parameters', () => {
  const v5 = parseModelConfig(FAMILY_CONFIGS.qwen3);
  const classic = parseModelConfig({
    ...FAMILY_CONFIGS.qwen3,
    rope_parameters: undefined,
    rope_theta: 1000000,
    rope_scaling: { type: "linear", factor: 2 },
  });
  assert.deepEqual(classic.ropes[0].params, { rope_type: "linear", rope_theta: 1000000, factor: 2 });
  assert.deepEqual(classic.ropes, v5.ropes);
});
