// The GGUF v3 container llama.cpp reads: "GGUF", version 3, tensor count,
// metadata count, the metadata key/values, the tensor infos (name, dims with
// the fastest-varying first, ggml type, offset), padding to the alignment,
// then each tensor's bytes at its aligned offset. Everything little-endian.
import { closeSync, openSync, writeSync } from "node:fs";

/** ggml tensor types this writer emits (values from ggml.h's enum ggml_type). */
export const GGML_TYPE = { F32: 0, F16: 1, Q4_0: 2, Q5_0: 6, Q8_0: 8, Q4_K: 12, Q6_K: 14, BF16: 30 } as const;
export type GgmlTypeName = keyof typeof GGML_TYPE;

/** gguf_type: how a metadata value is encoded. */
const VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
} as const;

export type GgufValue =
  | { type: "u32" | "i32" | "f32" | "u8"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "array"; of: "string"; value: string[] }
  | { type: "array"; of: "i32" | "f32" | "u32"; value: ArrayLike<number> };

export const u32 = (value: number): GgufValue => ({ type: "u32", value });
export const f32 = (value: number): GgufValue => ({ type: "f32", value });
export const bool = (value: boolean): GgufValue => ({ type: "bool", value });
export const str = (value: string): GgufValue => ({ type: "string", value });

export interface GgufTensor {
  name: string;
  /** Dims fastest-varying first (ggml's ne): a Hugging Face [out, in] matrix is [in, out]. */
  dims: number[];
  type: GgmlTypeName;
  /** The encoded bytes (produced lazily, one tensor in memory at a time). */
  bytes: () => Uint8Array;
  /** The encoded size, known before encoding (the tensor infos come first). */
  size: number;
}

export const GGUF_ALIGNMENT = 32;

class ByteSink {
  private chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  string(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u64(b.length);
    this.push(b);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  if (v.type === "array") {
    sink.u32(VALUE_TYPE.array);
    sink.u32(VALUE_TYPE[v.of]);
    sink.u64(v.value.length);
    for (let i = 0; i < v.value.length; i++) {
      const item = v.value[i];
      if (v.of === "string") sink.string(item as string);
      else if (v.of === "f32") sink.f32(item as number);
      else if (v.of === "i32") sink.i32(item as number);
      else sink.u32(item as number);
    }
    return;
  }
  sink.u32(VALUE_TYPE[v.type]);
  if (v.type === "string") sink.string(v.value);
  else if (v.type === "bool") sink.push(Buffer.of(v.value ? 1 : 0));
  else if (v.type === "u8") sink.push(Buffer.of(v.value));
  else if (v.type === "f32") sink.f32(v.value);
  else if (v.type === "i32") sink.i32(v.value);
  else sink.u32(v.value);
}

const align = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** Writes a GGUF v3 file; tensors are encoded one at a time, so peak memory is one tensor. */
export function writeGguf(file: string, metadata: Map<string, GgufValue>, tensors: GgufTensor[]): number {
  const head = new ByteSink();
  head.push(Buffer.from("GGUF", "ascii"));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.size);
  for (const [key, value] of metadata) {
    head.string(key);
    writeValue(head, value);
  }
  let offset = 0;
  for (const t of tensors) {
    head.string(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML_TYPE[t.type]);
    head.u64(offset);
    offset = align(offset + t.size);
  }
  const fd = openSync(file, "w");
  try {
    const header = head.bytes();
    writeSync(fd, header);
    let at = header.length;
    const pad = (to: number) => {
      if (to > at) writeSync(fd, Buffer.alloc(to - at));
      at = to;
    };
    pad(align(at));
    const dataStart = at;
    for (const t of tensors) {
      const bytes = t.bytes();
      if (bytes.length !== t.size)
        throw new Error(`GGUF tensor ${t.name}: ${bytes.length} bytes, expected ${t.size}`);
      writeSync(fd, bytes);
      at += bytes.length;
      pad(dataStart + align(at - dataStart));
    }
    return at;
  } finally {
    closeSync(fd);
  }
}
