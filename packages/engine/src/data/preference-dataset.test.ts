import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import {
  answerRow,
  isPreferenceRow,
  parsePreferenceDataset,
  readPreferenceDataset,
} from "./preference-dataset.js";

const openai = {
  input: { messages: [{ role: "user", content: "Capital of France?" }] },
  preferred_output: [{ role: "assistant", content: "Paris." }],
  non_preferred_output: [{ role: "assistant", content: "Lyon." }],
};
const trl = {
  prompt: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "2+2?" },
  ],
  chosen: [{ role: "assistant", content: "4" }],
  rejected: [{ role: "assistant", content: "5" }],
};

const jsonl = (...rows: unknown[]) =>
  rows.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n");

function refused(text: string, message: RegExp): void {
  assert.throws(
    () => parsePreferenceDataset(text, { source: "prefs.jsonl" }),
    (error: unknown) =>
      isEngineError(error) && error.code === "invalid_dataset" && message.test(error.message),
  );
}

test("both forms parse to the same pair shape; TRL's string form is one user and one assistant turn", () => {
  const rows = parsePreferenceDataset(
    jsonl(openai, "", trl, { prompt: "hi", chosen: "hello", rejected: "go away" }),
  );
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0], {
    prompt: [{ role: "user", content: "Capital of France?" }],
    chosen: [{ role: "assistant", content: "Paris." }],
    rejected: [{ role: "assistant", content: "Lyon." }],
  });
  assert.equal(rows[1].prompt.length, 2);
  assert.deepEqual(rows[2].prompt, [{ role: "user", content: "hi" }]);
  assert.deepEqual(rows[2].rejected, [{ role: "assistant", content: "go away" }]);
});

test("OpenAI rows carry their tools, and tool calls in an answer must name one", () => {
  const tools = [
    { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } },
  ];
  const call = { id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } };
  const row = {
    input: { messages: [{ role: "user", content: "find it" }], tools },
    preferred_output: [{ role: "assistant", tool_calls: [call] }],
    non_preferred_output: [{ role: "assistant", content: "no" }],
  };
  const [parsed] = parsePreferenceDataset(jsonl(row));
  assert.equal(parsed.tools?.[0].function.name, "lookup");
  assert.equal(parsed.chosen[0].tool_calls?.[0].id, "c1");
  const unknown = { ...row, input: { messages: row.input.messages } };
  refused(jsonl(unknown), /prefs\.jsonl line 1: .*preferred_output\[0\]\.tool_calls\[0\]/);
});

test("bad rows are refused naming the line and the field", () => {
  refused(
    jsonl(openai, { ...openai, preferred_output: [] }),
    /line 2: "preferred_output" must be a non-empty array/,
  );
  refused(
    jsonl(openai, openai, { ...trl, chosen: [{ role: "user", content: "x" }] }),
    /line 3: "chosen\[0\]\.role" must be "assistant"/,
  );
  refused(jsonl({ ...trl, rejected: undefined }), /line 1: "rejected" is missing/);
  refused(jsonl({ ...openai, extra: 1 }), /line 1: unknown key "extra"/);
  refused(
    jsonl({ messages: [{ role: "user", content: "x" }] }),
    /line 1: expected a preference pair.*found "messages"/,
  );
  refused(
    jsonl({ ...trl, prompt: [...trl.prompt, { role: "assistant", content: "4" }] }),
    /line 1: "prompt" must end with/,
  );
  refused(
    jsonl({ ...openai, input: { messages: [{ role: "user", content: 3 }] } }),
    /line 1: "input\.messages\[0\]\.content" must be a string/,
  );
  refused(
    jsonl({ ...trl, chosen: [{ role: "assistant", content: "4", weight: 0 }] }),
    /"chosen\[0\]\.weight" is not allowed/,
  );
  refused("{not json", /line 1: not valid JSON/);
  refused("\n\n", /the dataset is empty/);
});

test("readPreferenceDataset streams a file with the same rules", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-prefs-"));
  const file = join(dir, "prefs.jsonl");
  writeFileSync(file, `${jsonl(openai, trl)}\n`);
  assert.equal((await readPreferenceDataset(file)).length, 2);
  writeFileSync(file, jsonl(openai, { prompt: [], chosen: "a", rejected: "b" }));
  await assert.rejects(
    readPreferenceDataset(file),
    /prefs\.jsonl line 2: "prompt" must be a non-empty array/,
  );
});

test("answerRow: the prompt's assistant turns are context (weight 0), then the answer", () => {
  const [row] = parsePreferenceDataset(
    jsonl({
      prompt: [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ],
      chosen: "d",
      rejected: "e",
    }),
  );
  const sft = answerRow(row, "rejected");
  assert.ok("messages" in sft);
  assert.deepEqual(
    sft.messages.map((m) => [m.role, m.content, (m as { weight?: number }).weight]),
    [
      ["user", "a", undefined],
      ["assistant", "b", 0],
      ["user", "c", undefined],
      ["assistant", "e", undefined],
    ],
  );
});

test("isPreferenceRow tells a pair of either form from an SFT row", () => {
  assert.equal(isPreferenceRow(openai), true);
  assert.equal(isPreferenceRow(trl), true);
  assert.equal(isPreferenceRow({ messages: [] }), false);
  assert.equal(isPreferenceRow({ prompt: "a", completion: "b" }), false);
  assert.equal(isPreferenceRow([1]), false);
});
