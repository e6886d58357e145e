import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loraLayersOf, zerosLike } from "../adapters/lora.js";
import { type FamilyName, type ModelConfig, parseModelConfig, SLOTS } from "../families/index.js";
import { BatchDecoder, createKvCache } from "../generation/decode.js";
import { createGenerator } from "../generation/generate.js";
import { decodeWeightBytes } from "../graph/frozen-weights.js";
import { ModelGraph } from "../graph/model.js";
import type {
  LayerWeights,
  LoraLayers,
  ModelWeights,
  ProjectionWeight,
  ServingWeights,
} from "../graph/weights.js";
import { getKernels } from "../kernels/index.js";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import type { QuantMatrix } from "../kernels/types.js";
import { loadModel } from "../loading/load.js";
import { WEIGHT_FORMATS } from "../quant/formats.js";
import { Rng } from "../rng.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { needs } from "../testing/missing-piece.js";
import { randomLoraAdapter, randomModelWeights, smallTestConfig } from "../testing/random-weights.js";
import { servingWeights, servingWeightsAsync } from "./serving-weights.js";

const FORMATS = ["bf16", "int8", "q4_0"] as const;

function fp32Of(w: ProjectionWeight): Float32Array {
  if (w instanceof Float32Array) return w;
  const q = w as QuantMatrix;
  const out = new Float32Array(q.rows * q.cols);
  for (let r = 0; r < q.rows; r++) dequantizeRow(q, r, out.subarray(r * q.cols, (r + 1) * q.cols));
  return out;
}

/** The serving weights widened back to fp32: what the format's decode must compute, exactly. */
function widened(w: ServingWeights): ModelWeights {
  const layers = w.layers.map((lw) => {
    const out = { ...lw } as unknown as LayerWeights;
    for (const slot of SLOTS) out[slot] = fp32Of(lw[slot]);
    return out;
  });
  const embed = fp32Of(w.embed);
  return { embed, layers, finalNorm: w.finalNorm, lmHead: w.lmHead === w.embed ? embed : fp32Of(w.lmHead) };
}

/** max |a − b| / max |b|. */
function relError(a: Float32Array, b: Float32Array): number {
  let err = 0;
  let mag = 0;
  for (let i = 0; i < b.length; i++) {
    err = Math.max(err, Math.abs(a[i] - b[i]));
    mag = Math.max(mag, Math.abs(b[i]));
  }
  return err / mag;
}

function randomIds(n: number, vocab: number, seed: number): number[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => rng.int(vocab));
}

/** Prefill 5 tokens, then one-token steps: the logits of every step, concatenated. */
function decodeLogits(weights: ServingWeights, config: ModelConfig, ids: number[], lora: LoraLayers | null) {
  const V = config.vocabSize;
  const decoder = new BatchDecoder(weights, config, 64);
  const cache = createKvCache(config, ids.length);
  const out = new Float32Array((ids.length - 4) * V);
  out.set(decoder.step([{ cache, tokenIds: ids.slice(0, 5), lora, wantLogits: true }]), 0);
  for (let t = 5; t < ids.length; t++) {
    out.set(decoder.step([{ cache, tokenIds: [ids[t]], lora, wantLogits: true }]), (t - 4) * V);
  }
  return out;
}

const configs: [string, ModelConfig][] = [
  ["Llama, hidden 64 (q4_0 blocks)", smallTestConfig({ hiddenSize: 64, intermediateSize: 96, headDim: 16 })],
  [
    "Llama, untied head",
    smallTestConfig({ hiddenSize: 64, intermediateSize: 96, headDim: 16, tieWordEmbeddings: false }),
  ],
  ...(Object.keys(FAMILY_CONFIGS) as FamilyName[]).map((f): [string, ModelConfig] => [
    f,
    parseModelConfig(FAMILY_CONFIGS[f]),
  ]),
];

for (const [name, config] of configs) {
  test(`serving formats: decode equals fp32 decode of the format's own weights, with and without LoRA (${name})`, () => {
    const weights = randomModelWeights(config, 3);
    const adapter = randomLoraAdapter(config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 4);
    const lora = loraLayersOf(adapter, config);
    const ids = randomIds(10, config.vocabSize, 7);
    for (const format of FORMATS) {
      const served = servingWeights(weights, config, format);
      // q4_0 holds a matrix whose rows are not whole 32-blocks as int8
      const q = served.layers[0].q as QuantMatrix;
      assert.equal(q.format, format === "q4_0" && config.hiddenSize % 32 !== 0 ? "int8" : format);
      // Kernels that round int8's and q4_0's decode activations to 8 bits
      // (quantInt8MaxRows) move each projection by about 0.4% (held to its
      // bound in testing/kernels/conformance-quant-int.ts), the logits by about 1%.
      const rounded = format !== "bf16" && (getKernels().quantInt8MaxRows ?? 0) > 0;
      const tolerance = rounded ? 3e-2 : 1e-4;
      const logits = [null, lora].map((l) => {
        const got = decodeLogits(served, config, ids, l);
        const err = relError(got, decodeLogits(widened(served), config, ids, l));
        assert.ok(
          err <= tolerance,
          `${format}${l ? " + LoRA" : ""}: error ${err} against its widened weights`,
        );
        return got;
      });
      // the adapter's effect is far outside that tolerance, so dropping it cannot pass
      assert.ok(relError(logits[0], logits[1]) > 10 * tolerance, `${format}: LoRA changes too little`);
    }
  });
}

test("serving formats: fp32 is the loaded weights themselves; every other format reads fewer bytes", () => {
  const config = smallTestConfig({ hiddenSize: 64, intermediateSize: 96, headDim: 16 });
  const weights = randomModelWeights(config, 3);
  assert.equal(servingWeights(weights, config, "fp32"), weights);
  const bytes = WEIGHT_FORMATS.map((f) => decodeWeightBytes(servingWeights(weights, config, f)));
  for (let i = 1; i < bytes.length; i++) assert.ok(bytes[i] < bytes[i - 1], `${WEIGHT_FORMATS[i]}: ${bytes}`);
  // the tied head is one matrix, quantized once
  const int8 = servingWeights(weights, config, "int8");
  assert.equal(int8.lmHead, int8.embed);
});

test("serving formats: the async conversion gives the same matrices, in slices that let the event loop run", async () => {
  // a 40000 x 64 embedding is three slices of about a million weights
  const config = smallTestConfig({ hiddenSize: 64, intermediateSize: 96, headDim: 16, vocabSize: 40000 });
  const weights = randomModelWeights(config, 3);
  for (const format of FORMATS) {
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const converted = await servingWeightsAsync(weights, config, format);
    clearInterval(ticker);
    const direct = servingWeights(weights, config, format);
    assert.deepEqual(converted.embed, direct.embed, `${format} embeddings`);
    assert.equal(converted.lmHead, converted.embed);
    assert.deepEqual(converted.layers[1].down, direct.layers[1].down, `${format} down_proj`);
    assert.ok(turns >= 1, `${format}: the event loop ran ${turns} times during the conversion`);
  }
});

test("serving formats: served weights train too (the backward pass through int8 layers; train-precision.test.ts checks its values)", () => {
  const config = smallTestConfig({ hiddenSize: 64, intermediateSize: 96, headDim: 16 });
  const served = servingWeights(randomModelWeights(config, 3), config, "int8");
  const graph = new ModelGraph(config, served);
  const adapter = randomLoraAdapter(config, { r: 2, alpha: 4, targetModules: ["q_proj"] }, 4);
  const lora = loraLayersOf(adapter, config);
  const batch = {
    B: 1,
    T: 4,
    inputIds: Int32Array.of(1, 2, 3, 4),
    targets: Int32Array.of(2, 3, 4, 5),
    lengths: Int32Array.of(4),
  };
  const grads = zerosLike(adapter);
  const { lossSum } = graph.forward(batch, lora, 1);
  graph.backward(lora, loraLayersOf(grads, config));
  assert.ok(Number.isFinite(lossSum));
  const dA = grads.tensors.values().next().value as Float32Array;
  assert.ok(
    dA.some((v) => v !== 0) && dA.every(Number.isFinite),
    "q_proj's LoRA gradients are finite and not all zero",
  );
});

test("serving formats: an unknown weightFormat is refused by name", () => {
  const config = smallTestConfig();
  const model = {
    dir: "",
    weights: randomModelWeights(config, 1),
    config,
    tokenizer: {} as never,
    adapter: null,
    logits: () => new Float32Array(0),
    withAdapter: () => model,
  };
  assert.throws(
    () => createGenerator(model, { weightFormat: "int4" as never }),
    /weightFormat must be one of fp32, bf16, int8, q4_0 \(got int4\)/,
  );
});

// The bundled model: how far each format's logits are from fp32's, and greedy
// decoding. Bounds are the measured errors (docs/serving-formats.md) with margin.
const pico = fileURLToPath(new URL("../../../../../models/pico-llama", import.meta.url));
test("serving formats on the bundled model: logit error per format; bf16 greedy tokens equal fp32's", {
  skip: !existsSync(pico) && needs("models/pico-llama", `${pico} is absent`),
}, async () => {
  const model = await loadModel(pico);
  const ids = model.tokenizer.encode(
    "The President said that the Congress of the United States must act on the budget before the end of the year, and",
  );
  const fp32 = new ModelGraph(model.config, model.weights, { inferenceOnly: true }).logits(ids, null);
  const bounds = { bf16: 0.02, int8: 0.06, q4_0: 0.5 };
  for (const format of FORMATS) {
    const served = servingWeights(model.weights, model.config, format);
    const logits = new ModelGraph(model.config, served, { inferenceOnly: true }).logits(ids, null);
    const err = relError(logits, fp32);
    assert.ok(err <= bounds[format], `${format}: max logit error ${err} of the largest logit`);
  }
  const base = createGenerator(model);
  const bf16 = createGenerator(model, { weightFormat: "bf16" });
  for (const prompt of [
    "Call me Ishmael.",
    "It is a truth universally acknowledged",
    "The Constitution of the United States",
  ]) {
    const promptIds = model.tokenizer.encode(prompt);
    const want = await base.complete({ promptIds, temperature: 0, maxTokens: 48 });
    const got = await bf16.complete({ promptIds, temperature: 0, maxTokens: 48 });
    assert.equal(got.text, want.text, prompt);
  }
});
