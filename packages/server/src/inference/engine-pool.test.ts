// EnginePool's memory: a model served only in converted formats holds no fp32
// weight matrix (the pool's report, and the process's ArrayBuffer bytes after
// a garbage collection), one also served in fp32 holds one fp32 copy, a format
// left idle while another serves is released and loads again when asked, and
// every format answers exactly what the engine answers in it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createGenerator, heldWeightBytes, loadModel, type WeightFormat } from "@svc/engine";
import { createRandomModel } from "@svc/engine/testing";
import { EnginePool } from "./engine-pool.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Bytes of live ArrayBuffers once garbage is collected. */
function arrayBufferBytes(): number {
  gc();
  gc();
  return process.memoryUsage().arrayBuffers;
}

const root = mkdtempSync(join(tmpdir(), "svc-engine-pool-"));
const modelDir = join(root, "model");
/** fp32 bytes of the model's weight matrices (9.6M weights). */
let fp32Bytes = 0;
const expected = {} as Record<WeightFormat, string>;
const request = {
  messages: [{ role: "user" as const, content: "Tell me about the sea." }],
  temperature: 0,
  maxTokens: 12,
};

before(async () => {
  await createRandomModel(modelDir, {
    hiddenSize: 512,
    intermediateSize: 1024,
    numHiddenLayers: 4,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    std: 0.05,
  });
  const model = await loadModel(modelDir);
  for (const format of ["fp32", "bf16", "int8", "q4_0"] as const) {
    expected[format] = (await createGenerator(model, { weightFormat: format }).complete(request)).text;
  }
  fp32Bytes = heldWeightBytes(model.weights).matrices;
});
after(() => rmSync(root, { recursive: true, force: true }));

async function answer(pool: EnginePool, format: WeightFormat): Promise<string> {
  const release = pool.hold(modelDir, format);
  try {
    return (await (await pool.model(modelDir, format)).generator.complete(request)).text;
  } finally {
    release();
  }
}

const heldFormats = (pool: EnginePool) =>
  pool
    .held()
    .map((h) => h.weightFormat)
    .sort();

test("a model served only in int8 holds no fp32 matrix, and answers the engine's int8 tokens", async () => {
  const lines: string[] = [];
  const pool = new EnginePool({ log: (line) => lines.push(line) });
  const baseline = arrayBufferBytes();
  assert.equal(await answer(pool, "int8"), expected.int8);
  const [held] = pool.held();
  assert.equal(pool.held().length, 1);
  assert.deepEqual([held.weightFormat, held.fp32MatrixBytes, held.running], ["int8", 0, 0]);
  assert.ok(held.matrixBytes < fp32Bytes / 3, `${held.matrixBytes} bytes of int8 matrices`);
  // what the process really holds: the int8 weights and small buffers, not the fp32 ones
  const grown = arrayBufferBytes() - baseline;
  assert.ok(grown < fp32Bytes / 2, `array buffers grew by ${grown} bytes; fp32 weights are ${fp32Bytes}`);
  assert.match(lines.join("\n"), /loaded .*model in int8 .*no fp32 copy held/);
  pool.close();
});

test("a model also served in fp32 holds one fp32 copy, which the other formats convert from", async () => {
  const lines: string[] = [];
  const pool = new EnginePool({ log: (line) => lines.push(line) });
  const baseline = arrayBufferBytes();
  for (const format of ["fp32", "int8", "q4_0"] as const)
    assert.equal(await answer(pool, format), expected[format]);
  const held = Object.fromEntries(pool.held().map((h) => [h.weightFormat, h]));
  assert.deepEqual(Object.keys(held).sort(), ["fp32", "int8", "q4_0"]);
  assert.equal(held.fp32.fp32MatrixBytes, held.fp32.matrixBytes);
  assert.equal(held.int8.fp32MatrixBytes, 0);
  assert.equal(held.q4_0.fp32MatrixBytes, 0);
  const grown = arrayBufferBytes() - baseline;
  assert.ok(grown < fp32Bytes * 1.5, `array buffers grew by ${grown} bytes: a second fp32 copy?`);
  assert.equal(lines.filter((l) => /converted from the fp32 copy this process serves/.test(l)).length, 2);
  pool.close();
});

test("a deployment switched fp32 → int8 → fp32: the idle format is released and loads again from disk", async () => {
  const lines: string[] = [];
  const pool = new EnginePool({ idleReleaseMs: 60_000, log: (line) => lines.push(line) });
  const baseline = arrayBufferBytes();
  assert.equal(await answer(pool, "fp32"), expected.fp32);
  assert.equal(await answer(pool, "int8"), expected.int8);
  pool.releaseIdle();
  assert.deepEqual(heldFormats(pool), ["fp32", "int8"], "nothing idle for a minute yet");
  pool.releaseIdle(Date.now() + 61_000);
  assert.deepEqual(heldFormats(pool), ["int8"], "fp32 idle while int8 served");
  assert.match(lines.join("\n"), /released .*model in fp32 \(idle 6\d s while int8 served/);
  const grown = arrayBufferBytes() - baseline;
  assert.ok(grown < fp32Bytes / 2, `array buffers grew by ${grown} bytes after fp32 was released`);

  // back to fp32: loaded again, and int8 (now the idle one) goes once fp32 has served a while
  assert.equal(await answer(pool, "fp32"), expected.fp32);
  assert.equal(lines.filter((l) => /loaded .*model in fp32/.test(l)).length, 2);
  const generating = pool.hold(modelDir, "int8");
  assert.equal(await answer(pool, "fp32"), expected.fp32);
  pool.releaseIdle(Date.now() + 61_000);
  assert.deepEqual(heldFormats(pool), ["fp32", "int8"], "a format generating is never released");
  generating();
  assert.equal(await answer(pool, "fp32"), expected.fp32);
  pool.releaseIdle(Date.now() + 61_000);
  assert.deepEqual(heldFormats(pool), ["fp32"]);
  pool.close();
});
