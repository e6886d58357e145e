import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SchemaError } from "../constrained/index.js";
import type { ToolDefinition } from "../types.js";
import {
  checkToolSchema,
  MAX_SCHEMA_DEPTH,
  parseToolCalls,
  type ToolCallEvent,
  ToolCallStream,
  toolCallGrammar,
} from "./tool-calls.js";
import { DEFAULT_TOOL_SYNTAX, detectToolSyntax, type ToolSyntax } from "./tool-syntax.js";

const HERMES: ToolSyntax = { ...DEFAULT_TOOL_SYNTAX, writtenBy: "template" };
const LLAMA3: ToolSyntax = {
  name: "llama3",
  open: "",
  close: "",
  separator: null,
  argumentsKey: "parameters",
  trigger: '{"name"',
  writtenBy: "template",
};

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup_order",
      parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    },
  },
  { type: "function", function: { name: "create_ticket" } },
];

/** The calls and content a stream of events amounts to. */
function replay(events: ToolCallEvent[]) {
  let content = "";
  const calls: { name: string; arguments: string }[] = [];
  for (const e of events) {
    if (e.type === "content") content += e.text;
    else if (e.type === "call") {
      assert.equal(e.index, calls.length);
      assert.match(e.id, /^call_[0-9a-f]{24}$/);
      calls.push({ name: e.name, arguments: "" });
    } else calls[e.index].arguments += e.text;
  }
  return { content, calls };
}

function streamed(syntax: ToolSyntax, text: string, piece: number) {
  const stream = new ToolCallStream(syntax);
  const events: ToolCallEvent[] = [];
  for (let i = 0; i < text.length; i += piece) events.push(...stream.push(text.slice(i, i + piece)));
  events.push(...stream.end());
  return { ...replay(events), complete: stream.complete };
}

describe("parseToolCalls and ToolCallStream", () => {
  const cases: [string, ToolSyntax, string, string, { name: string; arguments: string }[]][] = [
    ["plain text", HERMES, "Hello <tool there", "Hello <tool there", []],
    [
      "one hermes call after text",
      HERMES,
      'Let me look.\n<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": "A}1"}}\n</tool_call>',
      "Let me look.",
      [{ name: "lookup_order", arguments: '{"order_id": "A}1"}' }],
    ],
    [
      "parallel hermes calls",
      HERMES,
      '<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": "A1"}}\n</tool_call>\n<tool_call>\n{"name":"create_ticket","arguments":{"n":[1,{"x":"\\"}"}]}}\n</tool_call>',
      "",
      [
        { name: "lookup_order", arguments: '{"order_id": "A1"}' },
        { name: "create_ticket", arguments: '{"n":[1,{"x":"\\"}"}]}' },
      ],
    ],
    [
      "a Llama call",
      LLAMA3,
      '{"name": "lookup_order", "parameters": {"order_id": "A1"}}',
      "",
      [{ name: "lookup_order", arguments: '{"order_id": "A1"}' }],
    ],
  ];
  for (const [name, syntax, text, content, calls] of cases) {
    test(name, () => {
      const parsed = parseToolCalls(syntax, text);
      assert.equal(parsed.content, content);
      assert.deepEqual(
        parsed.toolCalls.map((c) => c.function),
        calls,
      );
      for (const piece of [1, 3, 7, 1000]) {
        const got = streamed(syntax, text, piece);
        assert.equal(got.content.trim(), content, `piece ${piece}`);
        assert.deepEqual(got.calls, calls, `piece ${piece}`);
        assert.equal(got.complete, true);
      }
    });
  }

  test("a call cut off (max_tokens) is content, not a call; the whole calls before it are kept", () => {
    const text = '<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": "A';
    assert.deepEqual(parseToolCalls(HERMES, text), { content: text, toolCalls: [] });
    assert.equal(streamed(HERMES, text, 2).complete, false);
    const whole = '<tool_call>\n{"name": "create_ticket", "arguments": {}}\n</tool_call>\n';
    for (const cut of [
      text,
      "<tool_call>\n",
      '<tool_call>\n{"name": "lookup_order", "arguments": {}}\n</tool_',
    ]) {
      const parsed = parseToolCalls(HERMES, `${whole}${cut}`);
      assert.equal(parsed.content, "");
      assert.deepEqual(
        parsed.toolCalls.map((c) => c.function),
        [{ name: "create_ticket", arguments: "{}" }],
      );
    }
    // Text that is not a call after a call is not a cut: all content.
    const garbage = `${whole}and then some words`;
    assert.deepEqual(parseToolCalls(HERMES, garbage), { content: garbage, toolCalls: [] });
  });

  test("the arguments key of another syntax is not a call", () => {
    const text = '{"name": "lookup_order", "arguments": {}}';
    assert.deepEqual(parseToolCalls(LLAMA3, text), { content: text, toolCalls: [] });
  });

  test("streamed arguments arrive as they are written, before the call ends", () => {
    const stream = new ToolCallStream(HERMES);
    const head = stream.push('<tool_call>\n{"name": "lookup_order", "arguments": {"order');
    assert.deepEqual(
      head.map((e) => e.type),
      ["call", "arguments"],
    );
    assert.deepEqual(head[1], { type: "arguments", index: 0, text: '{"order' });
  });
});

describe("toolCallGrammar", () => {
  const lookup = {
    kind: "sequence",
    items: [
      { kind: "literal", text: '<tool_call>\n{"name": "lookup_order", "arguments": ' },
      { kind: "json", schema: TOOLS[0].function.parameters },
      { kind: "literal", text: "}\n</tool_call>" },
    ],
  };
  const ticket = {
    kind: "sequence",
    items: [
      { kind: "literal", text: '<tool_call>\n{"name": "create_ticket", "arguments": ' },
      { kind: "json", schema: null },
      { kind: "literal", text: "}\n</tool_call>" },
    ],
  };
  const either = { kind: "choice", options: [lookup, ticket] };
  const many = { kind: "repeat", item: either, separator: { kind: "literal", text: "\n" }, min: 1 };

  test("by tool_choice", () => {
    assert.equal(toolCallGrammar(HERMES, { tools: TOOLS, toolChoice: "none" }), null);
    assert.deepEqual(toolCallGrammar(HERMES, { tools: TOOLS, toolChoice: "required" }), many);
    assert.deepEqual(
      toolCallGrammar(HERMES, { tools: TOOLS, toolChoice: "required", parallelToolCalls: false }),
      either,
    );
    assert.deepEqual(toolCallGrammar(HERMES, { tools: TOOLS }), {
      kind: "lazy",
      trigger: "<tool_call>",
      // biome-ignore lint/suspicious/noThenProperty: OutputGrammar's field
      then: many,
    });
    assert.deepEqual(
      toolCallGrammar(HERMES, {
        tools: TOOLS,
        toolChoice: { type: "function", function: { name: "lookup_order" } },
      }),
      lookup,
    );
  });

  test("Llama: one call per turn, the object is the opening", () => {
    const grammar = toolCallGrammar(LLAMA3, { tools: [TOOLS[0]], toolChoice: "auto" });
    assert.deepEqual(grammar, {
      kind: "lazy",
      trigger: '{"name"',
      // biome-ignore lint/suspicious/noThenProperty: OutputGrammar's field
      then: {
        kind: "sequence",
        items: [
          { kind: "literal", text: '{"name": "lookup_order", "parameters": ' },
          { kind: "json", schema: TOOLS[0].function.parameters },
          { kind: "literal", text: "}" },
        ],
      },
    });
  });
});

describe("detectToolSyntax", () => {
  test("finds the syntax a template writes, none when it drops calls, null when unknown", () => {
    const hermes = detectToolSyntax((messages) =>
      messages
        .map((m) =>
          m.tool_calls
            ? `<tool_call>\n{"name": "${m.tool_calls[0].function.name}", "arguments": {"x": 1}}\n</tool_call>`
            : m.content,
        )
        .join("|"),
    );
    assert.equal(hermes !== null && hermes !== "none" && hermes.name, "hermes");
    assert.equal(
      detectToolSyntax((messages) => messages.map((m) => m.content).join("|")),
      "none",
    );
    assert.equal(
      detectToolSyntax((messages) => messages.map((m) => (m.tool_calls ? "[CALLS]" : m.content)).join("|")),
      null,
    );
    assert.equal(
      detectToolSyntax(() => {
        throw new Error("cannot");
      }),
      "none",
    );
  });
});

describe("checkToolSchema", () => {
  const nested = (levels: number) => {
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < levels; i++) schema = { type: "object", properties: { a: schema } };
    return schema;
  };
  test("a schema nested thousands of levels deep is a SchemaError, not a stack overflow", () => {
    assert.throws(
      () => checkToolSchema(nested(50_000)),
      (error: unknown) => error instanceof SchemaError && /nests more than 64 levels/.test(error.message),
    );
    checkToolSchema(nested(MAX_SCHEMA_DEPTH / 2 - 1));
  });
  test("keywords outside the subset are named as checkJsonSchema names them", () => {
    assert.throws(
      () => checkToolSchema({ type: "string", pattern: "^a" }),
      (error: unknown) => error instanceof SchemaError && error.keyword === "pattern",
    );
  });
});
