import assert from "node:assert/strict";
import { test } from "node:test";
import { loraLayersOf } from "../adapters/lora.js";
import { type ModelConfig, parseModelConfig, SLOTS } from "../families/index.js";
import { BatchDecoder, createKvCache } from "../generation/decode.js";
import type { LayerWeights, LoraLayers, ProjectionWeight, ServingWeights } from "../graph/weights.js";
import { projectionShape } from "../graph/weights.js";
import type { QuantMatrix } from "../kernels/types.js";
import { servingWeights } from "../loading/serving-weights.js";
import { Rng } from "../rng.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { randomLoraAdapter, randomModelWeights } from "../testing/random-weights.js";
import { quantizeMatrix } from "./formats.js";
import { JOINED_GROUPS, joinedWeight, joinProjections } from "./joined.js";

const FORMATS = ["bf16", "int8", "q4_0"] as const;
// Qwen2: q/k/v biases, GQA, hidden 64 (whole q4_0 blocks)
const config = parseModelConfig(FAMILY_CONFIGS.qwen2);

test("joined projections: each group is one matrix, its slots are row views holding the bytes they held apart", () => {
  const weights = randomModelWeights(config, 5);
  for (const format of FORMATS) {
    const lw = weights.layers[0];
    const apart = Object.fromEntries(
      SLOTS.map((slot) => {
        const { out, in: inDim } = projectionShape(config, slot);
        return [slot, quantizeMatrix(format, lw[slot], out, inDim)];
      }),
    ) as Record<(typeof SLOTS)[number], QuantMatrix>;
    const joined = joinProjections({ ...lw, ...apart });
    for (const [group, slots] of Object.entries(JOINED_GROUPS)) {
      const whole = joined.joined?.[group as keyof typeof JOINED_GROUPS];
      assert.ok(whole, `${format}: ${group} joined`);
      assert.equal(
        whole.rows,
        slots.reduce((n, s) => n + apart[s].rows, 0),
      );
      assert.equal(joinedWeight(joined, slots), whole);
      for (const slot of slots) {
        const view = joined[slot] as QuantMatrix;
        assert.equal(view.data.buffer, whole.data.buffer, `${format} ${slot} is a view`);
        assert.deepEqual(
          [view.rows, view.cols, view.format],
          [apart[slot].rows, apart[slot].cols, apart[slot].format],
        );
        assert.deepEqual(view.data, apart[slot].data);
        assert.deepEqual(view.scales, apart[slot].scales);
      }
    }
    // o and down read inputs of their own
    assert.equal(joined.o, apart.o);
    assert.equal(joinedWeight(joined, ["o"]), null);
    // a copy whose slot was replaced no longer takes the joined product
    assert.equal(joinedWeight({ ...joined, k: apart.k }, ["q", "k", "v"]), null);
  }
});

test("joined projections: fp32 layers stay apart", () => {
  const weights = randomModelWeights(config, 5);
  const fp32 = joinProjections(weights.layers[0]);
  assert.deepEqual(fp32.joined, {});
  assert.equal(fp32.q, weights.layers[0].q);
  assert.equal(joinedWeight(fp32, ["q", "k", "v"]), null);
});

/** The layers with every slot copied into arrays of its own and no joined groups. */
function apart(weights: ServingWeights): ServingWeights {
  const layers = weights.layers.map((lw) => {
    const { joined: _, ...rest } = lw;
    const out: LayerWeights<ProjectionWeight> = { ...rest };
    for (const slot of SLOTS) {
      const w = lw[slot] as QuantMatrix;
      out[slot] = { ...w, data: w.data.slice(), scales: w.scales?.slice() ?? null } as QuantMatrix;
    }
    return out;
  });
  return { ...weights, layers };
}

/** A 40-token prefill (past the joined products' 32 rows: the slots' views), then one-token steps (joined). */
function decodeLogits(weights: ServingWeights, cfg: ModelConfig, lora: LoraLayers | null): Float32Array {
  const rng = new Rng(11);
  const ids = Array.from({ length: 44 }, () => rng.int(cfg.vocabSize));
  const V = cfg.vocabSize;
  const decoder = new BatchDecoder(weights, cfg, 64);
  const cache = createKvCache(cfg, ids.length);
  const out = new Float32Array(5 * V);
  out.set(decoder.step([{ cache, tokenIds: ids.slice(0, 40), lora, wantLogits: true }]), 0);
  for (let t = 40; t < ids.length; t++)
    out.set(decoder.step([{ cache, tokenIds: [ids[t]], lora, wantLogits: true }]), (t - 39) * V);
  return out;
}

test("joined projections: decode gives the same logits, bit for bit, as the projections apart (biases, LoRA)", () => {
  const weights = randomModelWeights(config, 3);
  const lora = loraLayersOf(
    randomLoraAdapter(config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 4),
    config,
  );
  for (const format of FORMATS) {
    const served = servingWeights(weights, config, format);
    assert.ok(
      served.layers.every((lw) => lw.joined?.qkv && lw.joined.gateUp),
      `${format}: joined`,
    );
    for (const l of [null, lora]) {
      assert.deepEqual(
        decodeLogits(served, config, l),
        decodeLogits(apart(served), config, l),
        `${format}${l ? " + LoRA" : ""}`,
      );
    }
  }
});
