// Upload validation gives the same answers on the event loop (small files) and
// on a worker thread (files over INLINE_LIMIT).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkDatasetOffLoop, INLINE_LIMIT, storedDatasetFormat } from "./dataset-validation.js";

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
    assert.deepEqual(await checkDatasetOffLoop(file(rows), "train.jsonl"), { rows, format: "sft" });
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

test("a file whose first row is a preference pair is checked as pairs (DPO), named by line", async () => {
  const pair = (i: number) =>
    JSON.stringify({ prompt: [{ role: "user", content: `q${i}` }], chosen: `a${i}`, rejected: `b${i}` });
  const text = `\n${pair(1)}\n${pair(2)}\n`;
  assert.deepEqual(await checkDatasetOffLoop(Buffer.from(text), "prefs.jsonl"), {
    rows: 2,
    format: "preference",
  });
  const mixed = `${pair(1)}\n${row(2)}\n`;
  assert.deepEqual(await checkDatasetOffLoop(Buffer.from(mixed), "prefs.jsonl"), {
    problem: "invalid_dataset",
    message:
      'prefs.jsonl line 2: expected a preference pair: "input", "preferred_output" and "non_preferred_output" (OpenAI), or "prompt", "chosen" and "rejected" (TRL); found "messages"',
    line: 2,
  });
  const dir = mkdtempSync(join(tmpdir(), "svc-format-"));
  writeFileSync(join(dir, "p.jsonl"), text);
  writeFileSync(join(dir, "s.jsonl"), `\n\n${row(1)}\n`);
  assert.equal(await storedDatasetFormat(join(dir, "p.jsonl")), "preference");
  assert.equal(await storedDatasetFormat(join(dir, "s.jsonl")), "sft");
});
