import assert from "node:assert/strict";
import { test } from "node:test";
import { makeBatch } from "./batching.js";
import { initLoraAdapter, loraLayersOf, zerosLike } from "./lora.js";
import { LlamaGraph } from "./model.js";
import { Rng } from "./rng.js";
import type { LlamaConfig } from "./types.js";
import { type LlamaWeights, type LoraLayers, projectionShape } from "./weights.js";

const config: LlamaConfig = {
  hiddenSize: 16,
  intermediateSize: 24,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 4,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  vocabSize: 20,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 64,
};

function randomWeights(seed: number): LlamaWeights {
  const rng = new Rng(seed);
  const t = (n: number, std: number, mean = 0) =>
    Float32Array.from({ length: n }, () => mean + std * rng.normal());
  const { hiddenSize: C, intermediateSize: F, vocabSize: V } = config;
  const Q = config.numAttentionHeads * config.headDim;
  const K = config.numKeyValueHeads * config.headDim;
  return {
    embed: t(V * C, 1),
    layers: Array.from({ length: config.numHiddenLayers }, () => ({
      inputNorm: t(C, 0.1, 1),
      q: t(Q * C, 0.3),
      k: t(K * C, 0.3),
      v: t(K * C, 0.3),
      o: t(C * Q, 0.3),
      postNorm: t(C, 0.1, 1),
      gate: t(F * C, 0.3),
      up: t(F * C, 0.3),
      down: t(C * F, 0.3),
    })),
    finalNorm: t(C, 0.1, 1),
    lmHead: t(V * C, 0.3),
  };
}

function randomLora(seed: number): LoraLayers {
  const adapter = initLoraAdapter(
    config,
    {
      r: 2,
      alpha: 4,
      targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    },
    seed,
  );
  const rng = new Rng(seed + 1);
  for (const [name, t] of adapter.tensors)
    if (name.includes("lora_B")) for (let i = 0; i < t.length; i++) t[i] = 0.2 * rng.normal();
  return loraLayersOf(adapter, config);
}

const examples = [
  {
    inputIds: Int32Array.from([1, 5, 7, 3, 9, 11, 2]),
    labels: Int32Array.from([-100, -100, 7, 3, 9, 11, 2]),
  },
  { inputIds: Int32Array.from([1, 4, 8, 6]), labels: Int32Array.from([-100, 4, 8, 6]) },
];

function meanLoss(graph: LlamaGraph, lora: LoraLayers): number {
  const { lossSum, count } = graph.forward(makeBatch(examples, 0), lora);
  return lossSum / count;
}

test("padded batch loss equals the per-sequence losses", () => {
  const graph = new LlamaGraph(config, randomWeights(1));
  const lora = randomLora(2);
  const both = graph.forward(makeBatch(examples, 0), lora);
  const one = graph.forward(makeBatch([examples[0]], 0), lora);
  const two = graph.forward(makeBatch([examples[1]], 0), lora);
  assert.equal(both.count, one.count + two.count);
  assert.ok(Math.abs(both.lossSum - one.lossSum - two.lossSum) < 1e-4 * both.lossSum);
});

test("logits of a prefix do not depend on later tokens (causal)", () => {
  const graph = new LlamaGraph(config, randomWeights(1));
  const full = graph.logits([1, 5, 7, 3, 9], null);
  const prefix = graph.logits([1, 5, 7], null);
  for (let i = 0; i < prefix.length; i++) assert.ok(Math.abs(full[i] - prefix[i]) < 1e-5);
  // the inference-only graph (one layer's activations reused by all) computes the same
  const lora = randomLora(2);
  const shared = new LlamaGraph(config, graph.weights, { inferenceOnly: true });
  assert.deepEqual(shared.logits([1, 5, 7, 3, 9], lora), graph.logits([1, 5, 7, 3, 9], lora));
  assert.throws(() => shared.forward(makeBatch(examples, 0), lora, 1));
});

test("skipping unlabelled rows gives the same loss and gradients", () => {
  const weights = randomWeights(3);
  const lora = randomLora(4);
  const run = (skip: boolean) => {
    const graph = new LlamaGraph(config, weights, { skipUnlabeledRows: skip });
    const batch = makeBatch(examples, 0);
    const grads = zerosLike(lora);
    const { lossSum, count } = graph.forward(batch, lora, 1 / 8);
    graph.backward(lora, grads);
    return { loss: lossSum / count, grad: grads.layers[0].q_proj?.a as Float32Array };
  };
  const a = run(true);
  const b = run(false);
  assert.ok(Math.abs(a.loss - b.loss) < 1e-6);
  for (let i = 0; i < a.grad.length; i++) assert.ok(Math.abs(a.grad[i] - b.grad[i]) < 1e-6);
});

test("LoRA gradients match finite differences", () => {
  const graph = new LlamaGraph(config, randomWeights(5));
  const lora = randomLora(6);
  const grads = zerosLike(lora);
  const batch = makeBatch(examples, 0);
  const { count } = graph.forward(batch, lora, 1 / 8);
  assert.equal(count, 8);
  graph.backward(lora, grads);
  let checked = 0;
  for (const layer of [0, 1]) {
    for (const target of ["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"] as const) {
      for (const factor of ["a", "b"] as const) {
        const param = lora.layers[layer][target]?.[factor] as Float32Array;
        const grad = grads.layers[layer][target]?.[factor] as Float32Array;
        // the entry with the largest gradient is the one finite differences resolve best
        let i = 0;
        for (let j = 0; j < grad.length; j++) if (Math.abs(grad[j]) > Math.abs(grad[i])) i = j;
        const h = 1e-2;
        const saved = param[i];
        param[i] = saved + h;
        const up = meanLoss(graph, lora);
        param[i] = saved - h;
        const down = meanLoss(graph, lora);
        param[i] = saved;
        const numeric = (up - down) / (2 * h);
        const tolerance = 2e-2 * Math.abs(grad[i]) + 2e-4;
        assert.ok(
          Math.abs(numeric - grad[i]) < tolerance,
          `layer ${layer} ${target}.${factor}[${i}]: analytic ${grad[i]} vs numeric ${numeric}`,
        );
        checked++;
      }
    }
  }
  assert.equal(checked, 20);
  assert.ok(projectionShape(config, "q_proj").out === 16);
});
