// The Responses API request parser alone: input items become the chat
// conversation, tools and text.format the chat's, and docs/api.md lists
// every parameter.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ApiError } from "../http/api-error.js";
import { refusedParam } from "./chat-params.js";
import { parseResponsesRequest, RESPONSES_PARAMETERS } from "./responses-request.js";

const API_DOCS = new URL("../../../../../docs/api.md", import.meta.url);

describe("responses request", () => {
  it("maps instructions, messages and function call items onto one chat conversation", async () => {
    const { params, echo } = await parseResponsesRequest({
      model: "m",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Use tools." },
        {
          role: "user",
          content: [
            { type: "input_text", text: "Where is " },
            { type: "input_text", text: "A17?" },
          ],
        },
        { type: "function_call", call_id: "call_1", name: "lookup", arguments: '{"id":"A17"}' },
        { type: "function_call", call_id: "call_2", name: "lookup", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "shipped" },
        { type: "function_call_output", call_id: "call_2", output: "late" },
        {
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: "Done.", annotations: [] }],
        },
      ],
      tools: [{ type: "function", name: "lookup", parameters: { type: "object" }, strict: null }],
      tool_choice: { type: "function", name: "lookup" },
      text: { format: { type: "json_schema", name: "f", schema: { type: "object" } } },
      max_output_tokens: 9,
      stream: true,
      metadata: { k: "v" },
      store: false,
    });
    assert.deepEqual(
      params.messages.map((m) => [
        m.role,
        m.content,
        m.tool_calls?.map((c) => c.id) ?? null,
        m.tool_call_id ?? null,
      ]),
      [
        ["system", "Be brief.", null, null],
        ["system", "Use tools.", null, null],
        ["user", "Where is A17?", null, null],
        ["assistant", "", ["call_1", "call_2"], null],
        ["tool", "shipped", null, "call_1"],
        ["tool", "late", null, "call_2"],
        ["assistant", "Done.", null, null],
      ],
    );
    assert.deepEqual(params.tools, [
      { type: "function", function: { name: "lookup", parameters: { type: "object" } } },
    ]);
    assert.deepEqual(params.toolChoice, { type: "function", function: { name: "lookup" } });
    assert.deepEqual(params.responseFormat, {
      type: "json_schema",
      json_schema: { name: "f", schema: { type: "object" } },
    });
    assert.equal(params.maxTokens, 9);
    assert.equal(params.maxTokensPolicy, "refuse");
    assert.equal(params.stream, true);
    assert.deepEqual(echo.metadata, { k: "v" });
    assert.equal(echo.instructions, "Be brief.");
  });

  it("include message.output_text.logprobs asks the generation for logprobs, with top_logprobs alternatives", async () => {
    const asked = await parseResponsesRequest({
      input: "hi",
      include: ["message.output_text.logprobs"],
      top_logprobs: 4,
    });
    assert.equal(asked.params.logprobs, 4);
    assert.equal(asked.echo.topLogprobs, 4);
    const bare = await parseResponsesRequest({ input: "hi", include: ["message.output_text.logprobs"] });
    assert.equal(bare.params.logprobs, 0);
    const none = await parseResponsesRequest({ input: "hi", include: [] });
    assert.equal(none.params.logprobs, undefined);
    assert.equal(none.echo.topLogprobs, null);
    // tool_choice "none": the text is not read for calls, so its tokens are the message's
    const noCalls = await parseResponsesRequest({
      input: "hi",
      include: ["message.output_text.logprobs"],
      tools: [{ type: "function", name: "f" }],
      tool_choice: "none",
    });
    assert.equal(noCalls.params.logprobs, 0);
  });

  it("refuses with the parameter's path first in the message", async () => {
    for (const [body, param] of [
      [{ input: "hi", previous_response_id: "resp_1" }, "previous_response_id"],
      [{ input: [] }, "input"],
      [
        { input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] },
        "input[0].content[0].type",
      ],
      [
        {
          input: "hi",
          tools: [{ type: "function", name: "f", parameters: { type: "string", pattern: "^a" } }],
        },
        "tools[0].parameters",
      ],
      [
        {
          input: "hi",
          text: { format: { type: "json_schema", name: "f", schema: { type: "string", pattern: "x" } } },
        },
        "text.format.schema",
      ],
      [{ input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{" }] }, "input[0].arguments"],
    ] as const) {
      const error = await parseResponsesRequest(body).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(error instanceof ApiError, JSON.stringify(body));
      assert.equal(refusedParam(error, RESPONSES_PARAMETERS), param, error.message);
    }
  });

  it("docs/api.md lists every Responses parameter", () => {
    const docs = readFileSync(API_DOCS, "utf8");
    const section = docs.slice(docs.indexOf("### Responses parameters"));
    const rows = section.split("\n").filter((line) => line.startsWith("| `"));
    const listed = new Set(
      rows.flatMap((row) => [...row.split("|")[1].matchAll(/`([a-z_]+)`/g)].map((m) => m[1])),
    );
    for (const name of RESPONSES_PARAMETERS) assert.ok(listed.has(name), `${name} is in the table`);
    for (const name of listed) assert.ok(RESPONSES_PARAMETERS.includes(name), `${name} is a parameter`);
  });
});
