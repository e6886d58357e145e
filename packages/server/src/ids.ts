// Identifiers and secrets. Job and deployment ids are UUIDv7 so that sorting by
// id is sorting by creation time; secrets are random base62 and only their
// SHA-256 hash is stored.
import { createHash, randomBytes } from "node:crypto";

let lastMs = 0;
let counter = 0;

/** RFC 9562 UUIDv7: 48-bit Unix ms timestamp, then a 12-bit counter (monotonic within this process), then random bits. */
export function uuidv7(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    ms = lastMs;
    counter++;
    if (counter > 0xfff) {
      ms = ++lastMs;
      counter = 0;
    }
  } else {
    counter = randomBytes(2).readUInt16BE(0) & 0x3ff;
  }
  lastMs = ms;
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform random base62 string (rejection sampling keeps it unbiased). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export function nowIso(): string {
  return new Date().toISOString();
}
