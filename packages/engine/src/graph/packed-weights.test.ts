import assert from "node:assert/strict";
import { test } from "node:test";
import { initLoraAdapter, loraLayersOf, zerosLike } from "../adapters/lora.js";
import { makeBatch } from "../data/batching.js";
import { parseModelConfig } from "../families/index.js";
import { getKernels } from "../kernels/index.js";
import { loadPortableKernels } from "../kernels/portable.js";
import { Rng } from "../rng.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { needs } from "../testing/missing-piece.js";
import { randomModelWeights } from "../testing/random-weights.js";
import { machineMemoryBytes } from "./machine-memory.js";
import { ModelGraph } from "./model.js";
import { PackedWeights, packBudgetBytes, packedWeightBytes } from "./packed-weights.js";

// Wide enough, over enough rows, that the projections take the blocked path
// (the one that reads packed weights): more than 32 rows and 16 columns.
const config = parseModelConfig({
  ...FAMILY_CONFIGS.qwen2,
  hidden_size: 48,
  intermediate_size: 80,
  vocab_size: 50,
  max_position_embeddings: 128,
});

function withBudget<T>(mb: string | undefined, f: () => T): T {
  const before = process.env.SVC_PACKED_WEIGHTS_MB;
  if (mb === undefined) delete process.env.SVC_PACKED_WEIGHTS_MB;
  else process.env.SVC_PACKED_WEIGHTS_MB = mb;
  try {
    return f();
  } finally {
    if (before === undefined) delete process.env.SVC_PACKED_WEIGHTS_MB;
    else process.env.SVC_PACKED_WEIGHTS_MB = before;
  }
}

test("a training step over weights packed ahead gives the same bits as one without", {
  skip: getKernels().packB ? false : needs("native kernels", "these kernels pack nothing"),
}, () => {
  const weights = randomModelWeights(config, 5);
  const adapter = initLoraAdapter(config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 6);
  const rng = new Rng(7);
  for (const [name, t] of adapter.tensors)
    if (name.includes("lora_B")) for (let i = 0; i < t.length; i++) t[i] = 0.1 * rng.normal();
  const lora = loraLayersOf(adapter, config);
  const examples = [41, 37].map((len) => {
    const ids = Int32Array.from({ length: len }, () => rng.int(config.vocabSize));
    return { inputIds: ids, labels: ids };
  });
  const step = (graph: ModelGraph) => {
    const grads = zerosLike(adapter);
    const { lossSum } = graph.forward(makeBatch(examples, 0), lora, 1 / 78);
    graph.backward(lora, loraLayersOf(grads, config));
    return { lossSum, grads: [...grads.tensors.values()] };
  };
  const plain = withBudget("0", () => new ModelGraph(config, weights));
  const packed = withBudget(undefined, () => new ModelGraph(config, weights));
  const want = step(plain);
  const got = step(packed);
  assert.equal(got.lossSum, want.lossSum);
  assert.deepEqual(got.grads, want.grads);
  assert.ok(want.grads.some((g) => g.some((x) => x !== 0)));
});

test("weights are packed only within the budget, and only by kernels that pack", () => {
  const weights = randomModelWeights(config, 5);
  const kern = getKernels();
  if (kern.packB) {
    assert.ok(PackedWeights.of(kern, weights, Number.POSITIVE_INFINITY));
    assert.equal(PackedWeights.of(kern, weights, 1024), null);
  }
  assert.equal(PackedWeights.of(loadPortableKernels(), weights, Number.POSITIVE_INFINITY), null);
  assert.equal(
    withBudget("3", () => packBudgetBytes()),
    3 * 2 ** 20,
  );
  assert.throws(() => withBudget("lots", () => packBudgetBytes()), /SVC_PACKED_WEIGHTS_MB must be a number/);
});

test("the packs take twice the weights within the budget, none beyond it; the default budget is a quarter of the machine's memory", () => {
  assert.equal(packedWeightBytes(1000, 2000), 2000);
  assert.equal(packedWeightBytes(1001, 2000), 0);
  assert.equal(packedWeightBytes(0, 2000), 0);
  assert.equal(
    withBudget(undefined, () => packBudgetBytes()),
    machineMemoryBytes() / 4,
  );
  assert.equal(
    withBudget("0", () => packedWeightBytes(1)),
    0,
  );
  assert.ok(machineMemoryBytes() > 0);
});
