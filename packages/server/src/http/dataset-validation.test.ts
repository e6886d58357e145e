// Upload validation gives the same answers on the event loop (small files) and
// on a worker thread (files over INLINE_LIMIT).
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkDatasetOffLoop, INLINE_LIMIT } from "./dataset-validation.js";

const row = (i: number) =>
  JSON.stringify({
    messages: [
      { role: "user", content: `question ${i} ${"x".repeat(100)}` },
      { role: "assistant", content: `answer ${i}` },
    ],
  });

function file(rows: number, badLine?: { at: number; text: string | Buffer }): Buffer {
  const lines: (string | Buffer)[] = Array.from({ length: rows }, (_, i) => `${row(i)}\n`);
  if (badLine) lines[badLine.at - 1] = badLine.text;
  return Buffer.concat(lines.map((l) => (typeof l === "string" ? Buffer.from(l) : l)));
}

test("small and large files: rows counted, the first bad line named, bytes that are not UTF-8 found", async () => {
  for (const rows of [10, 12_000]) {
    const big = rows > 10;
    assert.equal(file(rows).length > INLINE_LIMIT, big, "one file each side of the limit");
    assert.deepEqual(await checkDatasetOffLoop(file(rows), "train.jsonl"), { rows });
    const bad = await checkDatasetOffLoop(file(rows, { at: 7, text: '{"messages": []}\n' }), "train.jsonl");
    assert.deepEqual(bad, {
      problem: "invalid_dataset",
      message: 'train.jsonl line 7: "messages" must be a non-empty array',
      line: 7,
    });
    const latin1 = Buffer.from('{"prompt": "caf\xe9", "completion": "x"}\n', "latin1");
    assert.deepEqual(await checkDatasetOffLoop(file(rows, { at: 9, text: latin1 }), "train.jsonl"), {
      problem: "invalid_utf8",
      line: 9,
    });
  }
});
