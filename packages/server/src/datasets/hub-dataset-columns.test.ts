// Column shapes of Hub datasets, explicit mappings, and the rows they make.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ColumnShapeError, RowShapeError, resolveRowShape, trainingRow } from "./hub-dataset-columns.js";

test("the known shapes are found from the column names; other columns are left out", () => {
  assert.deepEqual(resolveRowShape(["id", "messages"]), { kind: "messages", messages: "messages" });
  assert.deepEqual(resolveRowShape(["prompt", "completion"]), {
    kind: "prompt_completion",
    prompt: "prompt",
    completion: "completion",
    system: undefined,
  });
  assert.deepEqual(resolveRowShape(["instruction", "input", "output", "text"]), {
    kind: "alpaca",
    instruction: "instruction",
    output: "output",
    input: "input",
    system: undefined,
  });
});

test("no shape, or more than one, is refused naming the columns", () => {
  assert.throws(
    () => resolveRowShape(["text", "label"]),
    (e: Error) => {
      assert.ok(e instanceof ColumnShapeError);
      assert.match(e.message, /no known column shape.*columns found: "text", "label"/);
      return true;
    },
  );
  assert.throws(() => resolveRowShape(["messages", "prompt", "completion"]), /more than one shape/);
  assert.throws(() => resolveRowShape(["messages", "system"]), /"messages" and "system" both found/);
});

test("an explicit mapping names existing columns of one shape", () => {
  assert.deepEqual(resolveRowShape(["question", "answer"], { prompt: "question", completion: "answer" }), {
    kind: "prompt_completion",
    prompt: "question",
    completion: "answer",
    system: undefined,
  });
  assert.throws(
    () => resolveRowShape(["q"], { prompt: "q", completion: "a" }),
    /"columns.completion": no column "a" \(columns found: "q"\)/,
  );
  assert.throws(() => resolveRowShape(["q", "a"], { prompt: "q", output: "a" }), /must map one shape/);
  assert.throws(
    () => resolveRowShape(["q", "a"], { prompt: "q", answer: "a" } as Record<string, string>),
    /unknown field "answer"/,
  );
});

test("rows: Alpaca's input follows the instruction after a blank line; a system column makes a chat row", () => {
  const alpaca = resolveRowShape(["instruction", "input", "output"]);
  assert.deepEqual(trainingRow({ instruction: "Add.", input: "2 and 3", output: "5" }, alpaca, 1), {
    prompt: "Add.\n\n2 and 3",
    completion: "5",
  });
  assert.deepEqual(trainingRow({ instruction: "Name one.", input: null, output: "blue" }, alpaca, 2), {
    prompt: "Name one.",
    completion: "blue",
  });
  const withSystem = resolveRowShape(["prompt", "completion", "system"]);
  assert.deepEqual(trainingRow({ prompt: "Hi", completion: "Hello", system: "Be brief." }, withSystem, 1), {
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello" },
    ],
  });
  // Parquet struct fields are present in every row: a null one is left out as JSON would.
  const messages = resolveRowShape(["messages"]);
  assert.deepEqual(trainingRow({ messages: [{ role: "user", content: "x", name: null }] }, messages, 1), {
    messages: [{ role: "user", content: "x" }],
  });
  assert.throws(
    () => trainingRow({ prompt: "x", completion: null }, withSystem, 3),
    (e: Error) =>
      e instanceof RowShapeError &&
      e.row === 3 &&
      /column "completion" must be a string, got null/.test(e.message),
  );
  assert.throws(() => trainingRow({ prompt: "x" }, withSystem, 4), /column "completion" is missing/);
});

test("TRL's conversational prompt/completion: the conversation, trained on the completion only", () => {
  const shape = resolveRowShape(["prompt", "completion"]);
  const record = {
    prompt: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "2+2?" },
    ],
    completion: [{ role: "assistant", content: "4" }],
  };
  assert.deepEqual(trainingRow(record, shape, 1), {
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello", weight: 0 },
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "4" },
    ],
  });
});
