import assert from "node:assert/strict";
import { test } from "node:test";
import { readEventFile, readRecords, scalarSeries } from "../../test/tfevents-reader.js";
import {
  crc32c,
  EVENT_FILE_PREFIX,
  eventFileName,
  FILE_VERSION,
  fileVersionRecord,
  maskedCrc32c,
  scalarsRecord,
  tfRecord,
} from "./event-file.js";

test("CRC32C matches the published check values (RFC 3720 B.4 and the catalogue's 123456789)", () => {
  assert.equal(crc32c(Buffer.from("123456789")), 0xe3069283);
  assert.equal(crc32c(Buffer.alloc(32, 0)), 0x8a9136aa);
  assert.equal(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43);
  const ascending = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
  assert.equal(crc32c(ascending), 0x46dd794e);
  assert.equal(crc32c(new Uint8Array(0)), 0);
});

test("the mask rotates right by 15 and adds 0xa282ead8", () => {
  const data = Buffer.from("123456789");
  const crc = 0xe3069283;
  const rotated = ((crc >>> 15) | (crc << 17)) >>> 0;
  assert.equal(maskedCrc32c(data), (rotated + 0xa282ead8) % 2 ** 32);
});

test("a TFRecord is length, masked CRC of the length, data, masked CRC of the data", () => {
  const data = Buffer.from("hello");
  const record = tfRecord(data);
  assert.equal(record.length, 8 + 4 + 5 + 4);
  assert.equal(record.readBigUInt64LE(0), 5n);
  assert.equal(record.readUInt32LE(8), maskedCrc32c(record.subarray(0, 8)));
  assert.deepEqual(record.subarray(12, 17), data);
  assert.equal(record.readUInt32LE(17), maskedCrc32c(data));
  assert.deepEqual(readRecords(record), [data]);
});

test("an event file written here reads back record by record: version first, then every scalar", () => {
  const steps = [
    { step: 1, wallTime: 1_700_000_001.25, scalars: { "train/loss": 2.5, "train/learning_rate": 1e-4 } },
    { step: 2, wallTime: 1_700_000_002.5, scalars: { "train/loss": 2.25, "eval/loss": 2.75 } },
    {
      step: 3,
      wallTime: 1_700_000_003.75,
      scalars: { "eval/token_accuracy": 0.4375, "eval/exact_match": 0 },
    },
    { step: 2 ** 40, wallTime: 1_700_000_004, scalars: { "train/tokens_per_second": 812.3 } },
  ];
  const file = Buffer.concat([
    fileVersionRecord(1_700_000_000),
    ...steps.map((s) =>
      scalarsRecord(
        s.wallTime,
        s.step,
        Object.entries(s.scalars).map(([tag, value]) => ({ tag, value })),
      ),
    ),
  ]);
  const events = readEventFile(file);
  assert.equal(events.length, 1 + steps.length);
  assert.deepEqual(events[0], { wallTime: 1_700_000_000, step: 0, fileVersion: FILE_VERSION, scalars: [] });
  steps.forEach((s, i) => {
    const e = events[i + 1];
    assert.equal(e.step, s.step);
    assert.equal(e.wallTime, s.wallTime, "wall_time is a double");
    assert.equal(e.fileVersion, null);
    assert.deepEqual(
      e.scalars,
      Object.entries(s.scalars).map(([tag, value]) => ({ tag, value: Math.fround(value) })),
      "simple_value is a 32-bit float",
    );
  });
  assert.deepEqual(scalarSeries(events).get("train/loss"), [
    [1, 2.5],
    [2, 2.25],
  ]);
});

test("the reader refuses a flipped byte in the data or the length, and a truncated record", () => {
  const file = Buffer.concat([fileVersionRecord(1), scalarsRecord(2, 1, [{ tag: "train/loss", value: 1 }])]);
  const dataFlipped = Buffer.from(file);
  dataFlipped[file.length - 6] ^= 1;
  assert.throws(() => readRecords(dataFlipped), /bad data CRC/);
  const lengthFlipped = Buffer.from(file);
  lengthFlipped[0] ^= 1;
  assert.throws(() => readRecords(lengthFlipped), /bad length CRC/);
  assert.throws(() => readRecords(file.subarray(0, file.length - 1)), /truncated record/);
});

test("file names are events.out.tfevents.<unix seconds>.<host>, the host made safe for a path", () => {
  assert.equal(
    eventFileName(1_700_000_000.9, "build-7.example"),
    `${EVENT_FILE_PREFIX}1700000000.build-7.example`,
  );
  assert.equal(eventFileName(5, "a/b c"), "events.out.tfevents.5.a_b_c");
});
