// A reader of TensorBoard event files for tests, written from the format's
// spec independently of the writer (src/tensorboard/event-file.ts): it
// parses every TFRecord, checks both masked CRC32Cs with its own bitwise
// CRC, and decodes tensorflow.Event / Summary / Summary.Value, refusing
// anything it does not expect (an unknown wire type, a truncated field).

export interface ReadEvent {
  wallTime: number;
  step: number;
  fileVersion: string | null;
  /** Summary values that hold a simple_value, in file order. */
  scalars: { tag: string; value: number }[];
}

function crc32cBitwise(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function masked(bytes: Uint8Array): number {
  const crc = crc32cBitwise(bytes);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

/** The data of every record; throws on a bad CRC or a truncated record. */
export function readRecords(file: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let at = 0;
  while (at < file.length) {
    if (file.length - at < 12) throw new Error(`truncated record header at byte ${at}`);
    const lengthBytes = file.subarray(at, at + 8);
    const length = Number(file.readBigUInt64LE(at));
    if (file.readUInt32LE(at + 8) !== masked(lengthBytes)) throw new Error(`bad length CRC at byte ${at}`);
    const end = at + 12 + length + 4;
    if (end > file.length) throw new Error(`truncated record at byte ${at}`);
    const data = file.subarray(at + 12, at + 12 + length);
    if (file.readUInt32LE(at + 12 + length) !== masked(data)) throw new Error(`bad data CRC at byte ${at}`);
    records.push(data);
    at = end;
  }
  return records;
}

interface Field {
  field: number;
  wireType: number;
  /** varint value (wire type 0) */
  int?: bigint;
  /** the raw bytes of fixed64, fixed32 and length-delimited fields */
  bytes?: Buffer;
}

function decodeMessage(buf: Buffer): Field[] {
  const fields: Field[] = [];
  let at = 0;
  const readVarint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= buf.length) throw new Error("truncated varint");
      const byte = buf[at++];
      value |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
      if (shift > 63n) throw new Error("varint too long");
    }
  };
  const take = (n: number) => {
    if (at + n > buf.length) throw new Error("truncated field");
    const bytes = buf.subarray(at, at + n);
    at += n;
    return bytes;
  };
  while (at < buf.length) {
    const key = Number(readVarint());
    const field = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) fields.push({ field, wireType, int: readVarint() });
    else if (wireType === 1) fields.push({ field, wireType, bytes: take(8) });
    else if (wireType === 2) fields.push({ field, wireType, bytes: take(Number(readVarint())) });
    else if (wireType === 5) fields.push({ field, wireType, bytes: take(4) });
    else throw new Error(`unexpected wire type ${wireType} for field ${field}`);
  }
  return fields;
}

export function decodeEvent(data: Buffer): ReadEvent {
  const event: ReadEvent = { wallTime: 0, step: 0, fileVersion: null, scalars: [] };
  for (const f of decodeMessage(data)) {
    if (f.field === 1 && f.wireType === 1) event.wallTime = f.bytes!.readDoubleLE(0);
    else if (f.field === 2 && f.wireType === 0) event.step = Number(BigInt.asIntN(64, f.int!));
    else if (f.field === 3 && f.wireType === 2) event.fileVersion = f.bytes!.toString("utf8");
    else if (f.field === 5 && f.wireType === 2) {
      for (const v of decodeMessage(f.bytes!)) {
        if (v.field !== 1 || v.wireType !== 2) throw new Error(`unexpected Summary field ${v.field}`);
        let tag: string | null = null;
        let value: number | null = null;
        for (const x of decodeMessage(v.bytes!)) {
          if (x.field === 1 && x.wireType === 2) tag = x.bytes!.toString("utf8");
          else if (x.field === 2 && x.wireType === 5) value = x.bytes!.readFloatLE(0);
          else throw new Error(`unexpected Summary.Value field ${x.field}`);
        }
        if (tag === null || value === null) throw new Error("a Summary.Value without tag or simple_value");
        event.scalars.push({ tag, value });
      }
    } else throw new Error(`unexpected Event field ${f.field} (wire type ${f.wireType})`);
  }
  return event;
}

/** Every event of an event file, checked record by record. */
export function readEventFile(file: Buffer): ReadEvent[] {
  return readRecords(file).map(decodeEvent);
}

/** tag → [step, value][] over the whole file, in file order. */
export function scalarSeries(events: ReadEvent[]): Map<string, [number, number][]> {
  const series = new Map<string, [number, number][]>();
  for (const e of events)
    for (const s of e.scalars) {
      const points = series.get(s.tag) ?? [];
      points.push([e.step, s.value]);
      series.set(s.tag, points);
    }
  return series;
}
