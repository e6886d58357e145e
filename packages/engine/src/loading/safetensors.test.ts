import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import { openSafetensors, parseSafetensors, serializeSafetensors } from "./safetensors.js";

test("F32 tensors round-trip with metadata and an 8-byte aligned header", () => {
  const a = Float32Array.from([1.5, -2, 3.25, 0, 1e-7, -1e7]);
  const bytes = serializeSafetensors(
    [
      ["w", { shape: [2, 3], data: a }],
      ["b", { shape: [1], data: Float32Array.of(7) }],
    ],
    {
      metadata: { format: "pt" },
    },
  );
  const headerLength = Number(bytes.readBigUInt64LE(0));
  assert.equal((8 + headerLength) % 8, 0);
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString());
  assert.deepEqual(header.w, { dtype: "F32", shape: [2, 3], data_offsets: [0, 24] });
  assert.deepEqual(header.__metadata__, { format: "pt" });
  const file = parseSafetensors(bytes);
  assert.deepEqual([...(file.tensors.get("w")?.data ?? [])], [...a]);
  assert.deepEqual(file.tensors.get("w")?.shape, [2, 3]);
  assert.equal(file.tensors.get("b")?.data[0], 7);
});

test("BF16 writes round to nearest and read back as float32", () => {
  const bytes = serializeSafetensors(
    [["x", { shape: [3], data: Float32Array.from([1, 1.00390625, -3.140625]) }]],
    {
      dtype: "BF16",
    },
  );
  const x = parseSafetensors(bytes).tensors.get("x");
  assert.equal(x?.dtype, "BF16");
  assert.deepEqual([...(x?.data ?? [])], [1, 1, -3.140625]);
});

function rawFile(dtype: string, shape: number[], payload: Uint8Array): Buffer {
  const header = JSON.stringify({ t: { dtype, shape, data_offsets: [0, payload.length] } });
  const out = Buffer.alloc(8 + header.length + payload.length);
  out.writeBigUInt64LE(BigInt(header.length), 0);
  out.write(header, 8);
  out.set(payload, 8 + header.length);
  return out;
}

test("F16 values convert exactly, including subnormals and signs", () => {
  const halves = Uint16Array.from([0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff]);
  const t = parseSafetensors(rawFile("F16", [5], new Uint8Array(halves.buffer))).tensors.get("t");
  assert.deepEqual([...(t?.data ?? [])], [1, -2, Math.fround(0.333251953125), Math.fround(2 ** -24), 65504]);
});

test("unsupported dtypes and corrupt headers are named errors", () => {
  assert.throws(
    () => parseSafetensors(rawFile("I64", [1], new Uint8Array(8)), "m.safetensors"),
    (e) => isEngineError(e, "unsupported_dtype") && /m\.safetensors.*I64/.test(e.message),
  );
  assert.throws(
    () => parseSafetensors(rawFile("F32", [3], new Uint8Array(8)), "m.safetensors"),
    (e) => isEngineError(e, "invalid_file") && /data_offsets/.test(e.message),
  );
  assert.throws(
    () => parseSafetensors(new Uint8Array(4), "m.safetensors"),
    (e) => isEngineError(e, "invalid_file"),
  );
});

test("openSafetensors reads the header only, then any tensor or range of values as parseSafetensors does", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-safetensors-"));
  try {
    const w = Float32Array.from({ length: 24 }, (_, i) => (i - 11) / 8);
    for (const dtype of ["F32", "BF16", "F16"] as const) {
      const file = join(dir, `${dtype}.safetensors`);
      writeFileSync(
        file,
        serializeSafetensors(
          [
            ["b", { shape: [3], data: Float32Array.of(7, -1, 0.5) }],
            ["w", { shape: [4, 6], data: w }],
          ],
          { dtype },
        ),
      );
      const whole = parseSafetensors(readFileSync(file)).tensors;
      const lazy = openSafetensors(file).tensors;
      assert.deepEqual([...lazy.keys()].sort(), ["b", "w"]);
      assert.deepEqual(lazy.get("w")?.shape, [4, 6]);
      assert.equal(lazy.get("w")?.dtype, dtype);
      assert.deepEqual(lazy.get("w")?.read(), whole.get("w")?.data, dtype);
      assert.deepEqual(lazy.get("b")?.read(), whole.get("b")?.data, dtype);
      // rows 1..2 of w, into a buffer with room to spare (and a half-width scratch for F16/BF16)
      const out = new Float32Array(12);
      lazy.get("w")?.readInto(6, out, new Uint16Array(32));
      assert.deepEqual(out, whole.get("w")?.data.subarray(6, 18), `${dtype} rows 1..2`);
      assert.throws(() => lazy.get("w")?.readInto(18, new Float32Array(12)), RangeError);
    }
    writeFileSync(join(dir, "bad.safetensors"), rawFile("F32", [3], new Uint8Array(8)));
    assert.throws(
      () => openSafetensors(join(dir, "bad.safetensors")),
      (e) => isEngineError(e, "invalid_file") && /data_offsets/.test(e.message),
    );
    assert.throws(
      () => openSafetensors(join(dir, "missing.safetensors")),
      (e) => isEngineError(e, "missing_file"),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
