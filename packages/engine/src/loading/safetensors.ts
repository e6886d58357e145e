// The safetensors format: u64 little-endian header length N, N bytes of JSON
// ({name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?: {k: string}}),
// then the raw little-endian tensor bytes. Reading converts F32 / F16 / BF16
// to Float32Array; writing emits F32, BF16 or F16 (rounded to nearest even).
import { closeSync, fstatSync, openSync, readFileSync, readSync, writeFileSync } from "node:fs";
import { EngineError } from "../errors.js";
import { decodeBf16, decodeF16, f32BitsToBf16, f32BitsToF16 } from "../quant/half.js";

export type SafetensorsDtype = "F32" | "F16" | "BF16";

export interface Tensor {
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsFile {
  tensors: Map<string, Tensor & { dtype: string }>;
  metadata: Record<string, string>;
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
  if (bytes.length < 8) throw notSafetensors(file, "shorter than its 8-byte header length");
  const headerLength = Number(
    new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true),
  );
  if (headerLength > bytes.length - 8)
    throw notSafetensors(file, `header length ${headerLength} exceeds the file size`);
  const dataStart = 8 + headerLength;
  const { entries, metadata } = parseHeader(bytes.subarray(8, dataStart), bytes.length - dataStart, file);
  const tensors = new Map<string, Tensor & { dtype: string }>();
  for (const e of entries) {
    const raw = bytes.subarray(dataStart + e.begin, dataStart + e.end);
    tensors.set(e.name, { dtype: e.dtype, shape: e.shape, data: toFloat32(raw, e.dtype, e.count) });
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

/** A tensor of a file whose data is read when asked for (openSafetensors). */
export interface LazyTensor {
  shape: number[];
  dtype: SafetensorsDtype;
  /** Reads this tensor's bytes from the file, as float32. */
  read(): Float32Array;
  /**
   * Reads out.length of its values, from value `first` on, into `out`
   * (`halves`: scratch of at least out.length for an F16 / BF16 tensor).
   */
  readInto(
    first: number,
    out: Float32Array<ArrayBuffer>,
    halves?: Uint16Array<ArrayBuffer>,
  ): Float32Array<ArrayBuffer>;
}

/**
 * A safetensors file's header, with each tensor read only when asked for, so
 * a caller that converts tensor by tensor never holds the whole file (nor
 * all of it as float32) at once.
 */
export function openSafetensors(file: string): { tensors: Map<string, LazyTensor> } {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    throw new EngineError("missing_file", `${file}: not found`, file);
  }
  let size: number;
  let parsed: ReturnType<typeof parseHeader>;
  let dataStart: number;
  try {
    size = fstatSync(fd).size;
    if (size < 8) throw notSafetensors(file, "shorter than its 8-byte header length");
    const head = Buffer.alloc(8);
    readFully(fd, head, 0);
    const headerLength = Number(head.readBigUInt64LE(0));
    if (headerLength > size - 8)
      throw notSafetensors(file, `header length ${headerLength} exceeds the file size`);
    const header = Buffer.alloc(headerLength);
    readFully(fd, header, 8);
    dataStart = 8 + headerLength;
    parsed = parseHeader(header, size - dataStart, file);
  } finally {
    closeSync(fd);
  }
  const tensors = new Map<string, LazyTensor>();
  for (const e of parsed.entries) {
    const width = BYTES[e.dtype];
    tensors.set(e.name, {
      shape: e.shape,
      dtype: e.dtype,
      read: () => readValues(file, dataStart + e.begin, e.dtype, new Float32Array(e.count)),
      readInto: (first, out, halves) => {
        if (!(first >= 0 && first + out.length <= e.count))
          throw new RangeError(`${e.name}: values ${first}..${first + out.length} of ${e.count}`);
        return readValues(file, dataStart + e.begin + first * width, e.dtype, out, halves);
      },
    });
  }
  return { tensors };
}

function notSafetensors(file: string, why: string): EngineError {
  return new EngineError("invalid_file", `${file}: not a valid safetensors file (${why})`, file);
}

interface HeaderEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  count: number;
  /** Byte range within the data section. */
  begin: number;
  end: number;
}

/** The JSON header's tensors, each checked to lie within the `dataLength` bytes after the header. */
function parseHeader(
  headerBytes: Uint8Array,
  dataLength: number,
  file: string,
): { entries: HeaderEntry[]; metadata: Record<string, string> } {
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(headerBytes).toString("utf8"));
  } catch {
    throw notSafetensors(file, "header is not JSON");
  }
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  const entries: HeaderEntry[] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const entry = value as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const [begin, end] = entry.data_offsets ?? [];
    if (!(entry.dtype in BYTES)) {
      throw new EngineError(
        "unsupported_dtype",
        `${file}: tensor ${name} has dtype ${entry.dtype}; only F32, F16 and BF16 are supported`,
        file,
      );
    }
    const dtype = entry.dtype as SafetensorsDtype;
    const count = entry.shape.reduce((a, b) => a * b, 1);
    if (!(begin >= 0 && end <= dataLength && end - begin === count * BYTES[dtype])) {
      throw notSafetensors(
        file,
        `tensor ${name}: data_offsets [${begin}, ${end}] do not match shape [${entry.shape}] ${entry.dtype}`,
      );
    }
    entries.push({ name, dtype, shape: entry.shape, count, begin, end });
  }
  return { entries, metadata };
}

function readFully(fd: number, into: Uint8Array, position: number): void {
  for (let at = 0; at < into.length; ) {
    const n = readSync(fd, into, at, into.length - at, position + at);
    if (n === 0) throw new Error(`unexpected end of file at byte ${position + at}`);
    at += n;
  }
}

/** out.length values from byte `position` on, straight into `out` (F32) or through a half-width buffer. */
function readValues(
  file: string,
  position: number,
  dtype: SafetensorsDtype,
  out: Float32Array<ArrayBuffer>,
  scratch?: Uint16Array<ArrayBuffer>,
): Float32Array<ArrayBuffer> {
  const fd = openSync(file, "r");
  try {
    if (dtype === "F32") {
      readFully(fd, new Uint8Array(out.buffer, out.byteOffset, out.byteLength), position);
      return out;
    }
    const halves =
      scratch && scratch.length >= out.length ? scratch.subarray(0, out.length) : new Uint16Array(out.length);
    readFully(fd, new Uint8Array(halves.buffer, halves.byteOffset, halves.byteLength), position);
    if (dtype === "BF16") decodeBf16(halves, out);
    else decodeF16(halves, out);
    return out;
  } finally {
    closeSync(fd);
  }
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
