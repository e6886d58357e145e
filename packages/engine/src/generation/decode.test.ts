import assert from "node:assert/strict";
import { test } from "node:test";
import { loraLayersOf } from "../adapters/lora.js";
import { type FamilyName, parseModelConfig } from "../families/index.js";
import { ModelGraph } from "../graph/model.js";
import type { LoraLayers, ModelWeights } from "../graph/weights.js";
import { Rng } from "../rng.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import type { TestConfigOptions } from "../testing/random-weights.js";
import { randomLoraAdapter, randomModelWeights, smallTestConfig } from "../testing/random-weights.js";
import type { ModelConfig } from "../types.js";
import { BatchDecoder, createKvCache, type DecodeEntry } from "./decode.js";

function assertClose(actual: Float32Array, expected: Float32Array, rtol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let maxAbs = 0;
  for (let i = 0; i < expected.length; i++) maxAbs = Math.max(maxAbs, Math.abs(expected[i]));
  for (let i = 0; i < expected.length; i++) {
    const diff = Math.abs(actual[i] - expected[i]);
    if (diff > rtol * maxAbs)
      assert.fail(`${what}: index ${i}: ${actual[i]} vs ${expected[i]} (max |x| ${maxAbs})`);
  }
}

function randomIds(n: number, vocab: number, seed: number): number[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => rng.int(vocab));
}

interface Fixture {
  config: ModelConfig;
  weights: ModelWeights;
  graph: ModelGraph;
  loraA: LoraLayers;
  loraB: LoraLayers;
}

function fixture(overrides: TestConfigOptions | ModelConfig = {}): Fixture {
  const config = "family" in overrides ? overrides : smallTestConfig(overrides);
  const weights = randomModelWeights(config, 11);
  const adapterA = randomLoraAdapter(config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 21);
  const targetsB = config.family === "phi3" ? ["qkv_proj", "down_proj"] : ["q_proj", "v_proj", "down_proj"];
  const adapterB = randomLoraAdapter(config, { r: 2, alpha: 4, targetModules: targetsB }, 22);
  return {
    config,
    weights,
    graph: new ModelGraph(config, weights),
    loraA: loraLayersOf(adapterA, config),
    loraB: loraLayersOf(adapterB, config),
  };
}

/** Logits of every position from a fresh full forward (the training model). */
function fullLogits(f: Fixture, ids: number[], lora: LoraLayers | null): Float32Array {
  return f.graph.logits(ids, lora);
}

const decodeCases: [string, TestConfigOptions | ModelConfig][] = [
  ["GQA, tied embeddings", {}],
  [
    "MHA, untied embeddings, rope_theta 500000",
    { numKeyValueHeads: 4, tieWordEmbeddings: false, ropeTheta: 500000 },
  ],
  // every family, with windows shorter than the sequence where it has them
  ...(Object.keys(FAMILY_CONFIGS) as FamilyName[]).map((family): [string, ModelConfig] => [
    family,
    parseModelConfig(FAMILY_CONFIGS[family]),
  ]),
];

for (const [name, config] of decodeCases) {
  test(`decode: prefill then one-token steps give the full forward's logits (${name})`, () => {
    const f = fixture(config);
    const V = f.config.vocabSize;
    const ids = randomIds(12, V, 5);
    for (const lora of [null, f.loraA]) {
      const expected = fullLogits(f, ids, lora);
      const decoder = new BatchDecoder(f.weights, f.config, 64);
      const cache = createKvCache(f.config, ids.length);
      const prefill = decoder.step([{ cache, tokenIds: ids.slice(0, 5), lora, wantLogits: true }]);
      assertClose(prefill, expected.subarray(4 * V, 5 * V), 1e-4, "prefill logits");
      for (let t = 5; t < ids.length; t++) {
        const logits = decoder.step([{ cache, tokenIds: [ids[t]], lora, wantLogits: true }]);
        assertClose(logits, expected.subarray(t * V, (t + 1) * V), 1e-4, `decode logits at ${t}`);
      }
      assert.equal(cache.length, ids.length);
    }
  });
}

test("decode: a mixed step (prefill chunks, decodes, three adapters) matches each sequence alone", () => {
  const f = fixture();
  const V = f.config.vocabSize;
  const seqs = [
    { ids: randomIds(9, V, 1), lora: f.loraA },
    { ids: randomIds(6, V, 2), lora: null },
    { ids: randomIds(8, V, 3), lora: f.loraB },
    { ids: randomIds(5, V, 4), lora: f.loraA },
  ];
  const expected = seqs.map((s) => fullLogits(f, s.ids, s.lora));
  const decoder = new BatchDecoder(f.weights, f.config, 64);
  const caches = seqs.map((s) => createKvCache(f.config, s.ids.length));
  // Each sequence starts with a prefill chunk of a different size, then steps one token at a time.
  const fed = [4, 1, 3, 2];
  const firstStep: DecodeEntry[] = seqs.map((s, i) => ({
    cache: caches[i],
    tokenIds: s.ids.slice(0, fed[i]),
    lora: s.lora,
    wantLogits: i !== 0, // sequence 0's prefill is not finished: no logits for it
  }));
  let logits = decoder.step(firstStep);
  assert.equal(logits.length, 3 * V);
  for (let i = 1; i < 4; i++) {
    const t = fed[i] - 1;
    assertClose(
      logits.subarray((i - 1) * V, i * V),
      expected[i].subarray(t * V, (t + 1) * V),
      1e-4,
      `seq ${i}`,
    );
  }
  while (seqs.some((s, i) => fed[i] < s.ids.length)) {
    const entries: DecodeEntry[] = [];
    const which: number[] = [];
    seqs.forEach((s, i) => {
      if (fed[i] >= s.ids.length) return;
      entries.push({ cache: caches[i], tokenIds: [s.ids[fed[i]]], lora: s.lora, wantLogits: true });
      which.push(i);
    });
    logits = decoder.step(entries);
    which.forEach((i, j) => {
      const t = fed[i];
      assertClose(
        logits.subarray(j * V, (j + 1) * V),
        expected[i].subarray(t * V, (t + 1) * V),
        1e-4,
        `seq ${i} t ${t}`,
      );
      fed[i]++;
    });
  }
});

test("decode: a step past the cache or the context is refused and changes nothing", () => {
  const f = fixture();
  const decoder = new BatchDecoder(f.weights, f.config, 16);
  const cache = createKvCache(f.config, 4);
  decoder.step([{ cache, tokenIds: [1, 2, 3], lora: null, wantLogits: true }]);
  assert.throws(
    () => decoder.step([{ cache, tokenIds: [4, 5], lora: null, wantLogits: true }]),
    /exceed the cache/,
  );
  assert.throws(
    () => decoder.step([{ cache, tokenIds: [f.config.vocabSize], lora: null, wantLogits: true }]),
    /outside the vocabulary/,
  );
  assert.equal(cache.length, 3);
});

test("decode: a longrope sequence crossing its original context recomputes its cache; a refused crossing changes nothing", () => {
  const half = 2; // rotary dims 4 of head_dim 4 (hidden 16 / 4 heads)
  const f = fixture(
    parseModelConfig({
      ...FAMILY_CONFIGS.phi3,
      partial_rotary_factor: 1,
      sliding_window: undefined,
      original_max_position_embeddings: 6,
      rope_scaling: {
        type: "longrope",
        short_factor: Array(half).fill(1.2),
        long_factor: Array(half).fill(3),
      },
    }),
  );
  const V = f.config.vocabSize;
  const ids = randomIds(9, V, 3);
  const decoder = new BatchDecoder(f.weights, f.config, 64);
  const cache = createKvCache(f.config, ids.length);
  decoder.step([{ cache, tokenIds: ids.slice(0, 5), lora: null, wantLogits: true }]);
  assert.throws(
    () => decoder.step([{ cache, tokenIds: [ids[5], V], lora: null, wantLogits: true }]),
    /outside the vocabulary/,
  );
  assert.equal(cache.length, 5, "the refused crossing step left the cache as it was");
  // each token past the crossing is what a full forward of the sequence so far picks
  for (let t = 5; t < ids.length; t++) {
    const logits = decoder.step([{ cache, tokenIds: [ids[t]], lora: null, wantLogits: true }]);
    const full = fullLogits(f, ids.slice(0, t + 1), null);
    assertClose(logits, full.subarray(t * V, (t + 1) * V), 1e-4, `logits at ${t}`);
  }
  assert.equal(cache.length, ids.length);
});

test("decode: positions past the first RoPE table size still match the full forward", () => {
  const f = fixture();
  const V = f.config.vocabSize;
  const ids = randomIds(270, V, 9);
  const expected = fullLogits(f, ids, null);
  const decoder = new BatchDecoder(f.weights, f.config, 1024);
  const cache = createKvCache(f.config, ids.length);
  decoder.step([{ cache, tokenIds: ids.slice(0, 250), lora: null, wantLogits: false }]);
  for (let t = 250; t < ids.length; t++) {
    const logits = decoder.step([{ cache, tokenIds: [ids[t]], lora: null, wantLogits: true }]);
    assertClose(logits, expected.subarray(t * V, (t + 1) * V), 1e-4, `decode logits at ${t}`);
  }
});
