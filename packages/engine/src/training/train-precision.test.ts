import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loraLayersOf, zerosLike } from "../adapters/lora.js";
import { isEngineError } from "../errors.js";
import { SLOTS } from "../families/index.js";
import { decodeWeightBytes } from "../graph/frozen-weights.js";
import { type GraphOptions, ModelGraph } from "../graph/model.js";
import type { LayerWeights, ModelWeights, ProjectionWeight, ServingWeights } from "../graph/weights.js";
import { getKernels } from "../kernels/index.js";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import { loadModel } from "../loading/load.js";
import { quantizeMatrix } from "../quant/formats.js";
import { holdsBf16Values, roundToBf16 } from "../quant/half.js";
import { Rng } from "../rng.js";
import { createRandomModel } from "../testing/random-model.js";
import { randomLoraAdapter, randomModelWeights, smallTestConfig } from "../testing/random-weights.js";
import type { DatasetRow } from "../types.js";
import { train } from "./train.js";
import { graphPrecision, resolvePrecision, TRAINING_PRECISIONS, trainingWeights } from "./train-precision.js";

const kern = getKernels();
// Large enough rows (B·T = 80) that native kernels take their bf16 GEMM, not a GEMV.
const config = smallTestConfig({ hiddenSize: 64, intermediateSize: 128, headDim: 16, vocabSize: 300 });
const spec = {
  r: 4,
  alpha: 8,
  targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
};

function batch(seed: number) {
  const B = 2;
  const T = 40;
  const rng = new Rng(seed);
  const inputIds = new Int32Array(B * T);
  for (let i = 0; i < inputIds.length; i++) inputIds[i] = Math.floor(rng.next() * config.vocabSize);
  const targets = new Int32Array(B * T);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < T; t++) targets[b * T + t] = t + 1 < T ? inputIds[b * T + t + 1] : -1;
  return { B, T, inputIds, targets, lengths: Int32Array.of(T, T) };
}

/** The loss and every LoRA gradient (concatenated) of one forward + backward on these weights. */
function step(weights: ServingWeights, options: GraphOptions = {}) {
  const adapter = randomLoraAdapter(config, spec, 5);
  const grads = zerosLike(adapter);
  const graph = new ModelGraph(config, weights, options);
  const b = batch(3);
  const { lossSum, count } = graph.forward(b, loraLayersOf(adapter, config), 1);
  graph.backward(loraLayersOf(adapter, config), loraLayersOf(grads, config));
  const all = [...grads.tensors.values()].flatMap((g) => [...g]);
  return { loss: lossSum / count, grads: Float64Array.from(all) };
}

/** max |a − b| / max |b|. */
function relDiff(a: Float64Array, b: Float64Array): number {
  let err = 0;
  let mag = 0;
  for (let i = 0; i < a.length; i++) {
    err = Math.max(err, Math.abs(a[i] - b[i]));
    mag = Math.max(mag, Math.abs(b[i]));
  }
  return err / mag;
}

/** fp32 weights holding exactly the values of `w` (each matrix dequantized). */
function widened(w: ServingWeights): ModelWeights {
  const f = (m: ProjectionWeight): Float32Array => {
    if (m instanceof Float32Array) return m;
    const out = new Float32Array(m.rows * m.cols);
    const row = new Float32Array(m.cols);
    for (let r = 0; r < m.rows; r++) {
      dequantizeRow(m, r, row);
      out.set(row, r * m.cols);
    }
    return out;
  };
  const embed = f(w.embed);
  const layers = w.layers.map((lw) => {
    const out = { ...lw, joined: undefined } as LayerWeights;
    for (const slot of SLOTS) out[slot] = f(lw[slot]);
    return out;
  });
  return { embed, layers, finalNorm: w.finalNorm, lmHead: w.lmHead === w.embed ? embed : f(w.lmHead) };
}

test("precision and baseWeights: values not understood are refused, naming the field", () => {
  assert.deepEqual([...TRAINING_PRECISIONS], ["fp32", "bf16", "auto"]);
  for (const [p, b, field] of [
    ["fp16", undefined, /precision must be "fp32", "bf16" or "auto" \(got "fp16"\)/],
    ["BF16", undefined, /precision must be/],
    ["bf16", "int4", /baseWeights must be "int8" or omitted \(got "int4"\)/],
    ["fp32", null, /baseWeights must be/],
  ] as const) {
    assert.throws(
      () => resolvePrecision(p, b, kern),
      (err: unknown) => isEngineError(err) && err.code === "invalid_argument" && field.test(err.message),
    );
  }
});

test("precision: auto is bf16 exactly where the kernels have bf16 dot products; int8 holds the base in int8", () => {
  assert.deepEqual(resolvePrecision(undefined, undefined, { bf16Dot: true }), {
    precision: "fp32",
    baseWeights: "fp32",
  });
  assert.deepEqual(resolvePrecision("auto", undefined, { bf16Dot: true }), {
    precision: "bf16",
    baseWeights: "bf16",
  });
  assert.deepEqual(resolvePrecision("auto", undefined, { bf16Dot: false }), {
    precision: "fp32",
    baseWeights: "fp32",
  });
  assert.deepEqual(resolvePrecision("auto", undefined, {}), { precision: "fp32", baseWeights: "fp32" });
  assert.deepEqual(resolvePrecision("bf16", undefined, {}), { precision: "bf16", baseWeights: "bf16" });
  assert.deepEqual(resolvePrecision("fp32", "int8", {}), { precision: "fp32", baseWeights: "int8" });
});

test("a bf16 base holds the frozen matrices in half of fp32's bytes, an int8 one in about a quarter", () => {
  const fp32 = randomModelWeights(config, 1);
  const bytes = decodeWeightBytes(fp32);
  const bf16 = trainingWeights(fp32, config, { precision: "bf16", baseWeights: "bf16" });
  const int8 = trainingWeights(fp32, config, { precision: "fp32", baseWeights: "int8" });
  assert.equal(decodeWeightBytes(bf16), bytes / 2);
  assert.equal(bf16.embed, fp32.embed, "the embedding table stays fp32 (lookups, as autocast)");
  assert.ok(
    !(bf16.lmHead instanceof Float32Array) && bf16.lmHead.format === "bf16",
    "the tied head gets a bf16 copy",
  );
  assert.ok(decodeWeightBytes(int8) < bytes * 0.27, `${decodeWeightBytes(int8)} of ${bytes}`);
  assert.equal(
    trainingWeights(bf16, config, { precision: "bf16", baseWeights: "bf16" }),
    bf16,
    "already bf16: used as is",
  );
  assert.throws(
    () => trainingWeights(int8, config, { precision: "bf16", baseWeights: "bf16" }),
    /held in int8; a bf16 run needs them in fp32 or bf16/,
  );
});

/** The weights with every fp32 value rounded to bf16 (nearest even): a bf16 checkpoint read into fp32. */
function bf16Valued(w: ModelWeights): ModelWeights {
  const embed = roundToBf16(w.embed);
  const layers = w.layers.map((lw) => {
    const out = { ...lw } as LayerWeights;
    for (const slot of SLOTS) out[slot] = roundToBf16(lw[slot]);
    return out;
  });
  return {
    embed,
    layers,
    finalNorm: w.finalNorm,
    lmHead: w.lmHead === w.embed ? embed : roundToBf16(w.lmHead),
  };
}

test("a bf16-valued embedding table (a bf16 checkpoint) is held in bf16, shared by a tied bf16 head; the run is unchanged", () => {
  const fp32 = bf16Valued(randomModelWeights(config, 1));
  assert.ok(holdsBf16Values(fp32.embed) && !holdsBf16Values(randomModelWeights(config, 1).embed));
  const bf16 = trainingWeights(fp32, config, { precision: "bf16", baseWeights: "bf16" });
  assert.ok(!(bf16.embed instanceof Float32Array) && bf16.embed.format === "bf16", "the table in bf16");
  assert.equal(bf16.lmHead, bf16.embed, "the tied head is the same bf16 matrix");
  const int8 = trainingWeights(fp32, config, { precision: "fp32", baseWeights: "int8" });
  assert.ok(!(int8.embed instanceof Float32Array) && int8.embed.format === "bf16");
  assert.ok(
    !(int8.lmHead instanceof Float32Array) && int8.lmHead.format === "int8",
    "an int8 head of its own",
  );
  assert.equal(
    trainingWeights(fp32, config, { precision: "fp32", baseWeights: "fp32" }),
    fp32,
    "fp32: as loaded",
  );
  // bit for bit the run that kept the table in fp32 beside a bf16 copy of the head
  const kept = {
    ...bf16,
    embed: fp32.embed,
    lmHead: quantizeMatrix("bf16", fp32.embed, config.vocabSize, config.hiddenSize),
  };
  const got = step(bf16);
  const want = step(kept);
  assert.equal(got.loss, want.loss);
  assert.deepEqual(got.grads, want.grads);
});

test("an int8 base: the loss and LoRA gradients are those of fp32 weights holding the same values", (t) => {
  const int8 = trainingWeights(randomModelWeights(config, 1), config, {
    precision: "fp32",
    baseWeights: "int8",
  });
  const got = step(int8);
  const want = step(widened(int8));
  const lossGap = Math.abs(got.loss - want.loss) / want.loss;
  const gradGap = relDiff(got.grads, want.grads);
  t.diagnostic(
    `${kern.isa}: loss ${got.loss} vs ${want.loss} (${lossGap.toExponential(2)}), gradients ${gradGap.toExponential(2)}`,
  );
  assert.ok(lossGap < 1e-5, `loss gap ${lossGap}`);
  assert.ok(gradGap < 1e-4, `gradient gap ${gradGap}`);
});

test("a bf16 base: loss and gradients as fp32 weights holding the same values, within bf16 rounding of the activations", (t) => {
  const bf16 = trainingWeights(randomModelWeights(config, 1), config, {
    precision: "bf16",
    baseWeights: "bf16",
  });
  const got = step(bf16);
  const want = step(widened(bf16));
  const lossGap = Math.abs(got.loss - want.loss) / want.loss;
  const gradGap = relDiff(got.grads, want.grads);
  t.diagnostic(
    `${kern.isa} (bf16 dot products: ${kern.bf16Dot === true}): loss gap ${lossGap.toExponential(2)}, gradients ${gradGap.toExponential(2)}`,
  );
  // bf16 dot products round every GEMM's input to 8 significant bits (2⁻⁹ relative each)
  const [lossTol, gradTol] = kern.bf16Dot ? [2e-3, 3e-2] : [1e-5, 1e-4];
  assert.ok(lossGap < lossTol, `loss gap ${lossGap}`);
  assert.ok(gradGap < gradTol, `gradient gap ${gradGap}`);
  assert.ok(gradGap > 0 || !kern.bf16Dot, "bf16 dot products changed nothing: were they used?");
});

test("an int8 base in a bf16 run: bf16 dot products where the kernels have them (not amx), loss and gradients within bf16 rounding", (t) => {
  const int8 = trainingWeights(randomModelWeights(config, 1), config, {
    precision: "bf16",
    baseWeights: "int8",
  });
  // both sides round attention's operands; they differ only in the int8 products
  const got = step(int8, { bf16: true });
  const want = step(widened(int8), { bf16: true });
  const lossGap = Math.abs(got.loss - want.loss) / want.loss;
  const gradGap = relDiff(got.grads, want.grads);
  const rounds = kern.bf16Dot === true && kern.isa !== "amx";
  t.diagnostic(
    `${kern.isa} (int8 × bf16: ${rounds}): loss gap ${lossGap.toExponential(2)}, gradients ${gradGap.toExponential(2)}`,
  );
  const [lossTol, gradTol] = rounds ? [2e-3, 3e-2] : [1e-5, 1e-4];
  assert.ok(lossGap < lossTol, `loss gap ${lossGap}`);
  assert.ok(gradGap < gradTol, `gradient gap ${gradGap}`);
  // fp32 products of the same values stay within 1e-4 (the fp32 int8 test above); bf16 ones do not
  if (rounds)
    assert.ok(gradGap > 1e-4, `int8 products in bf16 moved the gradients only ${gradGap}: were they used?`);
});

test("a bf16 run's graph multiplies attention on bf16 operands; an fp32 run's does not", (t) => {
  assert.deepEqual(graphPrecision({ precision: "bf16", baseWeights: "int8" }), { bf16: true });
  assert.deepEqual(graphPrecision({ precision: "fp32", baseWeights: "int8" }), { bf16: false });
  const weights = randomModelWeights(config, 1);
  const got = step(weights, { bf16: true });
  const want = step(weights);
  const lossGap = Math.abs(got.loss - want.loss) / want.loss;
  const gradGap = relDiff(got.grads, want.grads);
  t.diagnostic(`${kern.isa}: loss gap ${lossGap.toExponential(2)}, gradients ${gradGap.toExponential(2)}`);
  // every unit rounds attention's operands (with or without bf16 dot products)
  assert.ok(lossGap > 0 && gradGap > 0, "bf16 attention changed nothing: did the flag reach the kernels?");
  assert.ok(lossGap < 2e-3, `loss gap ${lossGap}`);
  assert.ok(gradGap < 3e-2, `gradient gap ${gradGap}`);
});

test("bf16 against fp32 on the same fp32 model: first-step loss and gradients within bf16's bounds", (t) => {
  const fp32 = randomModelWeights(config, 1);
  const resolved = { precision: "bf16", baseWeights: "bf16" } as const;
  const got = step(trainingWeights(fp32, config, resolved), graphPrecision(resolved));
  const want = step(fp32);
  const lossGap = Math.abs(got.loss - want.loss) / want.loss;
  const gradGap = relDiff(got.grads, want.grads);
  t.diagnostic(
    `loss bf16 ${got.loss} fp32 ${want.loss}: gap ${lossGap.toExponential(2)}; gradients ${gradGap.toExponential(2)}`,
  );
  assert.ok(lossGap < 5e-3, `loss gap ${lossGap}`);
  assert.ok(gradGap < 6e-2, `gradient gap ${gradGap}`);
});

test("train() in bf16 and on an int8 base: reports the precision it used, losses within 2% of fp32's", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "svc-precision-"));
  try {
    await createRandomModel(join(root, "model"), {
      hiddenSize: 64,
      intermediateSize: 128,
      numHiddenLayers: 2,
      seed: 4,
    });
    const model = await loadModel(join(root, "model"));
    const rows: DatasetRow[] = Array.from({ length: 8 }, (_, i) => ({
      prompt: `question ${i}: what is ${i} plus ${i}?`,
      completion: `the answer is ${2 * i}, of course`,
    }));
    const hyperparameters = {
      lora: { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj", "down_proj"] },
      maxSteps: 4,
      batchSize: 4,
      learningRate: 1e-2,
      seed: 3,
    };
    const run = async (name: string, precision?: "fp32" | "bf16", baseWeights?: "int8") => {
      const losses: number[] = [];
      const result = await train({
        model,
        trainSet: rows,
        hyperparameters,
        outputDir: join(root, name),
        precision,
        baseWeights,
        onProgress: (p) => {
          if (p.loss !== null) losses.push(p.loss);
        },
      });
      assert.equal(result.status, "completed");
      return { result, losses };
    };
    const fp32 = await run("fp32");
    const bf16 = await run("bf16", "bf16");
    const int8 = await run("int8", "fp32", "int8");
    assert.deepEqual(fp32.result.precision, { precision: "fp32", baseWeights: "fp32" });
    assert.deepEqual(bf16.result.precision, { precision: "bf16", baseWeights: "bf16" });
    assert.deepEqual(int8.result.precision, { precision: "fp32", baseWeights: "int8" });
    for (const [name, other] of [
      ["bf16", bf16],
      ["int8", int8],
    ] as const) {
      const gaps = other.losses.map((l, i) => Math.abs(l - fp32.losses[i]) / fp32.losses[i]);
      t.diagnostic(
        `${name}: losses ${other.losses.map((l) => l.toFixed(5)).join(" ")} vs fp32 ${fp32.losses.map((l) => l.toFixed(5)).join(" ")}; largest gap ${Math.max(...gaps).toExponential(2)}`,
      );
      assert.equal(other.losses.length, 4);
      assert.ok(Math.max(...gaps) < 0.02, `${name}: gaps ${gaps}`);
    }
    await assert.rejects(
      train({
        model,
        trainSet: rows,
        hyperparameters,
        outputDir: join(root, "bad"),
        precision: "fp16" as never,
      }),
      (err: unknown) => isEngineError(err) && /precision must be/.test(err.message),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
