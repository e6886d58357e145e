import assert from "node:assert/strict";
import { test } from "node:test";
import { isPromptRow, parsePromptDataset } from "./grpo-dataset.js";

test("GRPO prompt rows keep their other fields; a bad row fails naming its line and field", () => {
  const rows = parsePromptDataset(
    [
      { messages: [{ role: "user", content: "2+2?" }], answer: "4" },
      {
        messages: [{ role: "user", content: "json" }],
        response_format: { type: "json_object" },
        meta: { k: 1 },
      },
    ]
      .map((r) => JSON.stringify(r))
      .join("\n"),
  );
  assert.equal(rows[0].answer, "4");
  assert.deepEqual(rows[1].meta, { k: 1 });
  assert.deepEqual(rows[1].response_format, { type: "json_object" });
  const bad = (row: unknown, pattern: RegExp) =>
    assert.throws(
      () =>
        parsePromptDataset(
          `${JSON.stringify({ messages: [{ role: "user", content: "ok" }] })}\n${JSON.stringify(row)}`,
          { source: "p.jsonl" },
        ),
      (e: Error) => pattern.test(e.message),
    );
  bad(
    {
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ],
    },
    /p\.jsonl line 2: "messages" must end with a user, system or tool message/,
  );
  bad({ messages: [] }, /line 2: "messages" must be a non-empty array/);
  bad(
    { messages: [{ role: "user", content: "q" }], response_format: { type: "yaml" } },
    /line 2: "response_format.type" must be one of/,
  );
  bad(
    { messages: [{ role: "user", content: "q" }], response_format: { type: "json_schema", json_schema: {} } },
    /json_schema.schema/,
  );
  assert.equal(isPromptRow({ messages: [{ role: "user", content: "q" }] }), true);
  assert.equal(
    isPromptRow({
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ],
    }),
    false,
  );
  assert.equal(isPromptRow({ prompt: "x", completion: "y" }), false);
});
