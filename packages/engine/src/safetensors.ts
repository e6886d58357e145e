// The safetensors format: u64 little-endian header length N, N bytes of JSON
// ({name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?: {k: string}}),
// then the raw little-endian tensor bytes. Reading converts F32 / F16 / BF16
// to Float32Array; writing emits F32, BF16 or F16 (rounded to nearest even).
import { readFileSync, writeFileSync } from "node:fs";
import { EngineError } from "./errors.js";
import { decodeBf16, decodeF16, f32BitsToBf16, f32BitsToF16 } from "./quant/half.js";

export type SafetensorsDtype = "F32" | "F16" | "BF16";

export interface Tensor {
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsFile {
  tensors: Map<string, Tensor & { dtype: string }>;
  metadata: Record<string, string>;
}

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

const BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };

export function readSafetensors(file: string): SafetensorsFile {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    throw new EngineError("missing_file", `${file}: not found`, file);
  }
  return parseSafetensors(bytes, file);
}

export function parseSafetensors(bytes: Uint8Array, file = "<buffer>"): SafetensorsFile {
  const bad = (why: string) =>
    new EngineError("invalid_file", `${file}: not a valid safetensors file (${why})`, file);
  if (bytes.length < 8) throw bad("shorter than its 8-byte header length");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > bytes.length - 8) throw bad(`header length ${headerLength} exceeds the file size`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, headerLength).toString("utf8"));
  } catch {
    throw bad("header is not JSON");
  }
  const dataStart = 8 + headerLength;
  const dataLength = bytes.length - dataStart;
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  const tensors = new Map<string, Tensor & { dtype: string }>();
  for (const [name, value] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const entry = value as HeaderEntry;
    const [begin, end] = entry.data_offsets ?? [];
    if (!(entry.dtype in BYTES)) {
      throw new EngineError(
        "unsupported_dtype",
        `${file}: tensor ${name} has dtype ${entry.dtype}; only F32, F16 and BF16 are supported`,
        file,
      );
    }
    const count = entry.shape.reduce((a, b) => a * b, 1);
    const width = BYTES[entry.dtype as SafetensorsDtype];
    if (!(begin >= 0 && end <= dataLength && end - begin === count * width)) {
      throw bad(
        `tensor ${name}: data_offsets [${begin}, ${end}] do not match shape [${entry.shape}] ${entry.dtype}`,
      );
    }
    const raw = bytes.subarray(dataStart + begin, dataStart + end);
    tensors.set(name, {
      dtype: entry.dtype,
      shape: entry.shape,
      data: toFloat32(raw, entry.dtype as SafetensorsDtype, count),
    });
  }
  return { tensors, metadata };
}

function toFloat32(raw: Uint8Array, dtype: SafetensorsDtype, count: number): Float32Array {
  const out = new Float32Array(count);
  if (dtype === "F32") {
    new Uint8Array(out.buffer).set(raw); // copy: the source offset need not be 4-aligned
    return out;
  }
  const halves = new Uint16Array(count);
  new Uint8Array(halves.buffer).set(raw);
  return dtype === "BF16" ? decodeBf16(halves, out) : decodeF16(halves, out);
}

/** Serialises tensors (in the given order) with an 8-byte aligned header. */
export function serializeSafetensors(
  tensors: Iterable<[string, Tensor]>,
  options: { metadata?: Record<string, string>; dtype?: SafetensorsDtype } = {},
): Buffer {
  const dtype = options.dtype ?? "F32";
  const width = BYTES[dtype];
  const entries = [...tensors];
  const header: Record<string, unknown> = {};
  if (options.metadata) header.__metadata__ = options.metadata;
  let offset = 0;
  for (const [name, t] of entries) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length)
      throw new Error(`tensor ${name}: shape [${t.shape}] does not match ${t.data.length} values`);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + count * width] };
    offset += count * width;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBytes = Buffer.from(json, "utf8");
  const out = Buffer.alloc(8 + headerBytes.length + offset);
  out.writeBigUInt64LE(BigInt(headerBytes.length), 0);
  headerBytes.copy(out, 8);
  let at = 8 + headerBytes.length;
  for (const [, t] of entries) {
    if (dtype === "F32") {
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
      at += t.data.byteLength;
    } else {
      const encode = dtype === "BF16" ? f32BitsToBf16 : f32BitsToF16;
      const bits = new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
      for (let i = 0; i < bits.length; i++, at += 2) out.writeUInt16LE(encode(bits[i]), at);
    }
  }
  return out;
}

export function writeSafetensors(
  file: string,
  tensors: Iterable<[string, Tensor]>,
  options: { metadata?: Record<string, string>; dtype?: SafetensorsDtype } = {},
): void {
  writeFileSync(file, serializeSafetensors(tensors, options));
}
