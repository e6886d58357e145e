// TensorBoard event files, written to the format's public spec (no npm
// package writes them without TensorFlow's native library). A file named
// events.out.tfevents.<unix seconds>.<host> is a sequence of TFRecord records:
//
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
//   data | uint32 masked CRC32C of the data
//
// where mask(crc) = ((crc >>> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32) and
// CRC32C is the Castagnoli CRC. Each record's data is a serialized
// tensorflow.Event protobuf (tensorflow/core/util/event.proto): wall_time
// (double, field 1), step (int64, field 2), and either file_version (string,
// field 3: "brain.Event:2" in a file's first record) or summary (field 5), a
// tensorflow.Summary (summary.proto) whose repeated Value (field 1) holds a tag
// (string, field 1) and a simple_value (float, field 2).

export const FILE_VERSION = "brain.Event:2";

/** One scalar of an event: `value` is stored as a 32-bit float (simple_value). */
export interface Scalar {
  tag: string;
  value: number;
}

// ---------------------------------------------------------------- CRC32C

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) of `bytes`. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC32C_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The masked CRC32C TFRecord stores (a CRC of data that holds CRCs is masked). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One TFRecord framing `data`. */
export function tfRecord(data: Uint8Array): Buffer {
  const record = Buffer.alloc(8 + 4 + data.length + 4);
  record.writeBigUInt64LE(BigInt(data.length), 0);
  record.writeUInt32LE(maskedCrc32c(record.subarray(0, 8)), 8);
  record.set(data, 12);
  record.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return record;
}

// ---------------------------------------------------------------- protobuf

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/** A non-negative integer up to 2^53 as a protobuf varint. */
function varint(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`not a varint: ${value}`);
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

const key = (field: number, wireType: number) => varint(field * 8 + wireType);

function lengthDelimited(field: number, payload: Uint8Array): Buffer {
  return Buffer.concat([key(field, WIRE_LENGTH_DELIMITED), varint(payload.length), payload]);
}

function double(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleLE(value);
  return Buffer.concat([key(field, WIRE_FIXED64), bytes]);
}

function float(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeFloatLE(value);
  return Buffer.concat([key(field, WIRE_FIXED32), bytes]);
}

/** A serialized tensorflow.Summary.Value with a simple_value. */
function summaryValue(scalar: Scalar): Buffer {
  return Buffer.concat([lengthDelimited(1, Buffer.from(scalar.tag, "utf8")), float(2, scalar.value)]);
}

export interface EventFields {
  /** Seconds since the Unix epoch. */
  wallTime: number;
  step: number;
  /** Set in a file's first event only. */
  fileVersion?: string;
  scalars?: Scalar[];
}

/** A serialized tensorflow.Event. */
export function encodeEvent(event: EventFields): Buffer {
  const parts = [double(1, event.wallTime), key(2, WIRE_VARINT), varint(event.step)];
  if (event.fileVersion !== undefined) parts.push(lengthDelimited(3, Buffer.from(event.fileVersion, "utf8")));
  if (event.scalars?.length) {
    const summary = Buffer.concat(event.scalars.map((s) => lengthDelimited(1, summaryValue(s))));
    parts.push(lengthDelimited(5, summary));
  }
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------- files

/** The record every event file starts with. */
export function fileVersionRecord(wallTime: number): Buffer {
  return tfRecord(encodeEvent({ wallTime, step: 0, fileVersion: FILE_VERSION }));
}

/** The record of one step's scalars. */
export function scalarsRecord(wallTime: number, step: number, scalars: Scalar[]): Buffer {
  return tfRecord(encodeEvent({ wallTime, step, scalars }));
}

export const EVENT_FILE_PREFIX = "events.out.tfevents.";

/** `events.out.tfevents.<unix seconds>.<host>`, the name TensorBoard looks for in a --logdir. */
export function eventFileName(wallTime: number, host: string): string {
  const safeHost = host.replace(/[^A-Za-z0-9._-]/g, "_") || "localhost";
  return `${EVENT_FILE_PREFIX}${Math.floor(wallTime)}.${safeHost}`;
}
