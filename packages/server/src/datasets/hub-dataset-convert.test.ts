// Hub split files (Parquet written by pyarrow, JSONL) as checked JSONL rows, on a worker thread.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { convertHubSplitOffLoop } from "./hub-dataset-convert.js";

const fixtures = fileURLToPath(new URL("../../../test/fixtures/hub-datasets/", import.meta.url));
const lines = (jsonl: Uint8Array) =>
  Buffer.from(jsonl)
    .toString("utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));

test("Parquet: a messages column (int64 id left out), and Alpaca over two row groups", async () => {
  const chat = await convertHubSplitOffLoop({
    dir: join(fixtures, "chat"),
    files: ["data/train-00000-of-00001.parquet"],
    label: 'org/chat split "train"',
    limit: 1 << 20,
  });
  assert.ok(chat.ok, JSON.stringify(chat));
  assert.equal(chat.rows, 4);
  assert.deepEqual(chat.ignoredColumns, ["id"]);
  assert.deepEqual(lines(chat.jsonl)[1], {
    messages: [
      { role: "user", content: "Capital of Italy?" },
      { role: "assistant", content: "Rome" },
    ],
  });
  const alpaca = await convertHubSplitOffLoop({
    dir: join(fixtures, "alpaca"),
    files: ["data/train-00000-of-00001.parquet"],
    label: 'org/alpaca split "train"',
    limit: 1 << 20,
  });
  assert.ok(alpaca.ok, JSON.stringify(alpaca));
  assert.deepEqual(lines(alpaca.jsonl), [
    { prompt: "Translate to French.\n\ncat", completion: "chat" },
    { prompt: "Add the numbers.\n\n2 and 3", completion: "5" },
    { prompt: "Name a colour.", completion: "blue" },
    { prompt: "Reverse the word.", completion: "olleh" },
  ]);
});

test("a bad row is refused with its row in the split and its place in the file", async () => {
  const bad = await convertHubSplitOffLoop({
    dir: join(fixtures, "bad"),
    files: ["data/train-00000-of-00001.parquet"],
    label: 'org/bad split "train"',
    limit: 1 << 20,
  });
  assert.deepEqual(bad, {
    ok: false,
    status: 400,
    code: "invalid_dataset",
    message:
      'org/bad split "train" row 3 (data/train-00000-of-00001.parquet row 3): column "completion" must be a string, got null',
  });

  const dir = mkdtempSync(join(tmpdir(), "svc-hub-split-"));
  try {
    const row = (q: string, role = "assistant") =>
      JSON.stringify({
        messages: [
          { role: "user", content: q },
          { role, content: "a" },
        ],
        source: "x",
      });
    writeFileSync(join(dir, "a.jsonl"), `${row("1")}\n\n${row("2")}\n`);
    writeFileSync(join(dir, "b.jsonl"), `${row("3")}\n${row("4", "bot")}\n`);
    const result = await convertHubSplitOffLoop({
      dir,
      files: ["a.jsonl", "b.jsonl"],
      label: "org/j",
      limit: 1 << 20,
    });
    // The engine's own message for the row (the same rule as a local file), at row 4 of the split.
    assert.deepEqual(result, {
      ok: false,
      status: 400,
      code: "invalid_dataset",
      message:
        'org/j row 4 (b.jsonl line 2): "messages[1].role" must be one of system, user, assistant, tool',
    });
    const tooBig = await convertHubSplitOffLoop({ dir, files: ["a.jsonl"], label: "org/j", limit: 100 });
    assert.equal(tooBig.ok, false);
    assert.equal(!tooBig.ok && tooBig.status, 413);
    writeFileSync(join(dir, "c.jsonl"), `${JSON.stringify({ text: "hello" })}\n`);
    const unknown = await convertHubSplitOffLoop({ dir, files: ["c.jsonl"], label: "org/j", limit: 1 << 20 });
    assert.equal(!unknown.ok && unknown.code, "hub_dataset_columns");
    assert.match(
      !unknown.ok ? unknown.message : "",
      /org\/j \(c.jsonl\): no known column shape.*columns found: "text"/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("JSONL: CRLF lines and a byte-order mark read as local files do; bytes that are not UTF-8 are refused with the row", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-hub-utf8-"));
  try {
    const row = JSON.stringify({ prompt: "caf\u00e9", completion: "ok" });
    writeFileSync(join(dir, "ok.jsonl"), `\ufeff${row}\r\n${row}\r\n`);
    const ok = await convertHubSplitOffLoop({ dir, files: ["ok.jsonl"], label: "org/u", limit: 1 << 20 });
    assert.ok(ok.ok, JSON.stringify(ok));
    assert.deepEqual(lines(ok.jsonl), [
      { prompt: "caf\u00e9", completion: "ok" },
      { prompt: "caf\u00e9", completion: "ok" },
    ]);
    writeFileSync(
      join(dir, "bad.jsonl"),
      Buffer.concat([
        Buffer.from(`${row}\n{"prompt": "`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`", "completion": "x"}\n`),
      ]),
    );
    const bad = await convertHubSplitOffLoop({ dir, files: ["bad.jsonl"], label: "org/u", limit: 1 << 20 });
    assert.deepEqual(bad, {
      ok: false,
      status: 400,
      code: "invalid_dataset",
      message: "org/u row 2 (bad.jsonl line 2): not valid UTF-8 text",
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a .json file: an array of rows (Alpaca's alpaca_data.json), or JSON Lines", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-hub-json-"));
  try {
    const items = [
      { instruction: "Add.", input: "1 and 2", output: "3" },
      { instruction: "Greet.", input: "", output: "Hi" },
    ];
    writeFileSync(join(dir, "alpaca_data.json"), JSON.stringify(items, null, 2));
    writeFileSync(join(dir, "lines.json"), `${JSON.stringify(items[0])}\n${JSON.stringify(items[1])}\n`);
    for (const file of ["alpaca_data.json", "lines.json"]) {
      const result = await convertHubSplitOffLoop({ dir, files: [file], label: "org/a", limit: 1 << 20 });
      assert.ok(result.ok, JSON.stringify(result));
      assert.deepEqual(lines(result.jsonl), [
        { prompt: "Add.\n\n1 and 2", completion: "3" },
        { prompt: "Greet.", completion: "Hi" },
      ]);
    }
    writeFileSync(join(dir, "bad.json"), JSON.stringify([items[0], { instruction: "x", output: 5 }]));
    const bad = await convertHubSplitOffLoop({ dir, files: ["bad.json"], label: "org/a", limit: 1 << 20 });
    assert.equal(
      !bad.ok && bad.message,
      'org/a row 2 (bad.json item 2): column "output" must be a string, got a number',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
