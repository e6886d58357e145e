import assert from "node:assert/strict";
import { test } from "node:test";
import { initLoraAdapter, loraLayersOf, zerosLike } from "../adapters/lora.js";
import { makeBatch } from "../data/batching.js";
import { type FamilyName, parseModelConfig } from "../families/index.js";
import { Rng } from "../rng.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { randomModelWeights } from "../testing/random-weights.js";
import type { LoraAdapter, ModelConfig } from "../types.js";
import { ModelGraph } from "./model.js";
import type { LoraLayers } from "./weights.js";

const config = parseModelConfig(FAMILY_CONFIGS.llama);
// the plain Llama block for the tests below; every family's block is checked at the end
const llama = parseModelConfig({
  ...FAMILY_CONFIGS.llama,
  attention_bias: false,
  rope_parameters: undefined,
});

function randomLora(cfg: ModelConfig, seed: number): { adapter: LoraAdapter; lora: LoraLayers } {
  const adapter = initLoraAdapter(cfg, { r: 2, alpha: 4, targetModules: ["all-linear"] }, seed);
  const rng = new Rng(seed + 1);
  for (const [name, t] of adapter.tensors)
    if (name.includes("lora_B")) for (let i = 0; i < t.length; i++) t[i] = 0.2 * rng.normal();
  return { adapter, lora: loraLayersOf(adapter, cfg) };
}

const examples = [
  {
    inputIds: Int32Array.from([1, 5, 7, 3, 9, 11, 2]),
    labels: Int32Array.from([-100, -100, 7, 3, 9, 11, 2]),
  },
  { inputIds: Int32Array.from([1, 4, 8, 6]), labels: Int32Array.from([-100, 4, 8, 6]) },
];

test("padded batch loss equals the per-sequence losses", () => {
  const graph = new ModelGraph(llama, randomModelWeights(llama, 1));
  const { lora } = randomLora(llama, 2);
  const both = graph.forward(makeBatch(examples, 0), lora);
  const one = graph.forward(makeBatch([examples[0]], 0), lora);
  const two = graph.forward(makeBatch([examples[1]], 0), lora);
  assert.equal(both.count, one.count + two.count);
  assert.ok(Math.abs(both.lossSum - one.lossSum - two.lossSum) < 1e-4 * both.lossSum);
});

test("logits of a prefix do not depend on later tokens (causal)", () => {
  const graph = new ModelGraph(llama, randomModelWeights(llama, 1));
  const full = graph.logits([1, 5, 7, 3, 9], null);
  const prefix = graph.logits([1, 5, 7], null);
  for (let i = 0; i < prefix.length; i++) assert.ok(Math.abs(full[i] - prefix[i]) < 1e-5);
  // the inference-only graph (one layer's activations reused by all) computes the same
  const { lora } = randomLora(llama, 2);
  const shared = new ModelGraph(llama, graph.weights, { inferenceOnly: true });
  assert.deepEqual(shared.logits([1, 5, 7, 3, 9], lora), graph.logits([1, 5, 7, 3, 9], lora));
  assert.throws(() => shared.forward(makeBatch(examples, 0), lora, 1));
});

test("skipping unlabelled rows gives the same loss and gradients", () => {
  const weights = randomModelWeights(config, 3);
  const { adapter, lora } = randomLora(config, 4);
  const run = (skip: boolean) => {
    const graph = new ModelGraph(config, weights, { skipUnlabeledRows: skip });
    const batch = makeBatch(examples, 0);
    const grads = loraLayersOf(zerosLike(adapter), config);
    const { lossSum, count } = graph.forward(batch, lora, 1 / 8);
    graph.backward(lora, grads);
    return { loss: lossSum / count, grad: grads.layers[0].q?.a as Float32Array };
  };
  const a = run(true);
  const b = run(false);
  assert.ok(Math.abs(a.loss - b.loss) < 1e-6);
  for (let i = 0; i < a.grad.length; i++) assert.ok(Math.abs(a.grad[i] - b.grad[i]) < 1e-6);
});

for (const family of Object.keys(FAMILY_CONFIGS) as FamilyName[]) {
  test(`${family}: LoRA gradients match finite differences`, () => {
    const cfg = parseModelConfig(FAMILY_CONFIGS[family]);
    const graph = new ModelGraph(cfg, randomModelWeights(cfg, 5, 1));
    const { adapter, lora } = randomLora(cfg, 6);
    const gradAdapter = zerosLike(adapter);
    const grads = loraLayersOf(gradAdapter, cfg);
    const batch = makeBatch(examples, 0);
    const { count } = graph.forward(batch, lora, 1 / 8);
    assert.equal(count, 8);
    graph.backward(lora, grads);
    const loss = () => {
      const { lossSum, count } = graph.forward(makeBatch(examples, 0), lora);
      return lossSum / count;
    };
    let checked = 0;
    for (const [name, param] of adapter.tensors) {
      if (!/layers\.[01]\./.test(name)) continue;
      const grad = gradAdapter.tensors.get(name) as Float32Array;
      // the entry with the largest gradient is the one finite differences resolve best
      let i = 0;
      for (let j = 0; j < grad.length; j++) if (Math.abs(grad[j]) > Math.abs(grad[i])) i = j;
      const h = 1e-2;
      const saved = param[i];
      param[i] = saved + h;
      const up = loss();
      param[i] = saved - h;
      const down = loss();
      param[i] = saved;
      const numeric = (up - down) / (2 * h);
      const tolerance = 2e-2 * Math.abs(grad[i]) + 2e-4;
      assert.ok(
        Math.abs(numeric - grad[i]) < tolerance,
        `${name}[${i}]: analytic ${grad[i]} vs numeric ${numeric}`,
      );
      assert.ok(Math.abs(grad[i]) > 1e-6, `${name}: the gradient reaches this factor`);
      checked++;
    }
    assert.equal(checked, adapter.tensors.size);
  });
}
