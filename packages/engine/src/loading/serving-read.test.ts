// readServingWeights / loadServingModel: a checkpoint converted as it is read
// must be exactly the weights servingWeights converts from the fp32 model in
// memory, for every family (fused tensors included), F32 and BF16 files and
// matrices larger than one read slice; it holds no fp32 matrix; and a
// generator on it answers exactly what today's generator in that format does.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { checkpointTensors } from "../export/hf-folder.js";
import { type FamilyName, type ModelConfig, parseModelConfig, SLOTS } from "../families/index.js";
import { createGenerator } from "../generation/generate.js";
import type { ProjectionWeight, ServingWeights } from "../graph/weights.js";
import type { QuantMatrix } from "../kernels/types.js";
import { readWeights } from "../loading/checkpoint.js";
import { loadModel, loadServingModel } from "../loading/load.js";
import { type SafetensorsDtype, writeSafetensors } from "../loading/safetensors.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { randomLoraAdapter, randomModelWeights, smallTestConfig } from "../testing/random-weights.js";
import { heldWeightBytes, readServingWeights, servingWeights } from "./serving-weights.js";

const FORMATS = ["bf16", "int8", "q4_0"] as const;
const PICO_DIR = fileURLToPath(new URL("../../../../../models/pico-llama", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "svc-serving-read-"));
after(() => rmSync(root, { recursive: true, force: true }));

function writeCheckpoint(name: string, config: ModelConfig, dtype: SafetensorsDtype): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeSafetensors(join(dir, "model.safetensors"), checkpointTensors(config, randomModelWeights(config, 3)), {
    dtype,
  });
  return dir;
}

function assertSameMatrix(a: ProjectionWeight, b: ProjectionWeight, what: string): void {
  if (a instanceof Float32Array || b instanceof Float32Array) {
    assert.ok(a instanceof Float32Array && b instanceof Float32Array, `${what}: one is fp32, one is not`);
    assert.deepEqual(a, b, what);
    return;
  }
  const [x, y] = [a as QuantMatrix, b as QuantMatrix];
  assert.deepEqual([x.format, x.rows, x.cols], [y.format, y.rows, y.cols], what);
  assert.deepEqual(x.data, y.data, `${what}: data`);
  assert.deepEqual(x.scales, y.scales, `${what}: scales`);
}

function assertSameWeights(a: ServingWeights, b: ServingWeights, what: string): void {
  assertSameMatrix(a.embed, b.embed, `${what} embed`);
  assert.equal(a.lmHead === a.embed, b.lmHead === b.embed, `${what}: tied head`);
  assertSameMatrix(a.lmHead, b.lmHead, `${what} lm_head`);
  assert.deepEqual(a.finalNorm, b.finalNorm);
  a.layers.forEach((lw, l) => {
    for (const slot of SLOTS) assertSameMatrix(lw[slot], b.layers[l][slot], `${what} layer ${l} ${slot}`);
    assert.deepEqual(lw.bias, b.layers[l].bias, `${what} layer ${l} biases`);
    assert.deepEqual(lw.attnNorm, b.layers[l].attnNorm, `${what} layer ${l} attnNorm`);
  });
}

const cases: [string, ModelConfig, SafetensorsDtype][] = [
  ...(Object.keys(FAMILY_CONFIGS) as FamilyName[]).map((f): [string, ModelConfig, SafetensorsDtype] => [
    f,
    parseModelConfig(FAMILY_CONFIGS[f]),
    "F32",
  ]),
  // gate/up [2304, 512] and the untied head [2100, 512] are over a million weights: several reads each
  [
    "Llama with matrices over one read slice, BF16 file",
    smallTestConfig({
      hiddenSize: 512,
      intermediateSize: 2304,
      headDim: 128,
      numHiddenLayers: 1,
      vocabSize: 2100,
      tieWordEmbeddings: false,
    }),
    "BF16",
  ],
];

for (const [name, config, dtype] of cases) {
  test(`${name}: converted as read equals servingWeights of the fp32 weights, with no fp32 matrix`, async () => {
    const dir = writeCheckpoint(name.replace(/\W+/g, "-"), config, dtype);
    const fp32 = await readWeights(dir, config);
    assertSameWeights(await readServingWeights(dir, config, "fp32"), fp32, "fp32");
    for (const format of FORMATS) {
      const read = await readServingWeights(dir, config, format);
      assertSameWeights(read, servingWeights(fp32, config, format), format);
      const bytes = heldWeightBytes(read);
      assert.equal(bytes.fp32Matrices, 0, `${format}: fp32 matrices held`);
      assert.ok(bytes.matrices < heldWeightBytes(fp32).matrices / 1.9, `${format}: ${bytes.matrices} bytes`);
    }
  });
}

test("a generator on loadServingModel answers the same tokens as createGenerator in that format, with or without an adapter", async () => {
  const model = await loadModel(PICO_DIR);
  const adapter = randomLoraAdapter(model.config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 5);
  const request = {
    messages: [{ role: "user" as const, content: "Tell me about the sea." }],
    temperature: 0,
    maxTokens: 24,
  };
  for (const format of ["fp32", ...FORMATS] as const) {
    const served = await loadServingModel(PICO_DIR, format);
    assert.equal(served.weightFormat, format);
    if (format !== "fp32") assert.equal(heldWeightBytes(served.weights).fp32Matrices, 0);
    const today = createGenerator(model, { weightFormat: format });
    const generator = createGenerator(served);
    const texts: string[] = [];
    for (const lora of [undefined, adapter]) {
      const expected = await today.complete({ ...request, adapter: lora });
      const got = await generator.complete({ ...request, adapter: lora });
      assert.equal(got.text, expected.text, `${format}${lora ? " with an adapter" : ""}`);
      assert.equal(got.completionTokens, expected.completionTokens, format);
      texts.push(got.text);
    }
    assert.notEqual(texts[0], texts[1], `${format}: the adapter changes the answer`);
  }
});

test("a model loaded in one format refuses to be served in another", async () => {
  const served = await loadServingModel(PICO_DIR, "int8");
  assert.throws(
    () => createGenerator(served, { weightFormat: "fp32" }),
    /loaded in int8 \(loadServingModel\) and cannot be served in fp32/,
  );
  // naming its own format is fine
  createGenerator(served, { weightFormat: "int8" });
});
