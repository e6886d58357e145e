import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EngineError } from "../errors.js";
import { parseDataset, readDataset } from "./dataset.js";

const CHAT = JSON.stringify({
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi 🙂" },
    { role: "assistant", content: "Hello!" },
  ],
});
const COMPLETION = JSON.stringify({ prompt: "2+2=", completion: "4" });

function assertDatasetError(
  run: () => unknown,
  line: number | undefined,
  message: string | RegExp,
): EngineError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof EngineError, `expected EngineError, got ${error}`);
    assert.equal(error.code, "invalid_dataset");
    assert.equal(error.line, line);
    if (typeof message === "string") assert.equal(error.message, message);
    else assert.match(error.message, message);
    return error;
  }
  assert.fail("expected an EngineError");
}

describe("parseDataset", () => {
  test("reads both formats", () => {
    const rows = parseDataset(`${CHAT}\n${COMPLETION}\n`);
    assert.deepEqual(rows, [
      {
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Hi 🙂" },
          { role: "assistant", content: "Hello!" },
        ],
      },
      { prompt: "2+2=", completion: "4" },
    ]);
  });

  test("keeps weight on assistant messages, accepts and drops a user's name", () => {
    const line = JSON.stringify({
      messages: [
        { role: "user", content: "weather?", name: "ana" },
        { role: "assistant", content: "let me check", weight: 0 },
        { role: "user", content: "well?" },
        { role: "assistant", content: "21 degrees", weight: 1 },
      ],
    });
    assert.deepEqual(parseDataset(line), [
      {
        messages: [
          { role: "user", content: "weather?" },
          { role: "assistant", content: "let me check", weight: 0 },
          { role: "user", content: "well?" },
          { role: "assistant", content: "21 degrees", weight: 1 },
        ],
      },
    ]);
  });

  test("handles a UTF-8 BOM, CRLF line endings, blank and whitespace-only lines", () => {
    const rows = parseDataset(`\uFEFF${CHAT}\r\n\r\n   \r\n${COMPLETION}\r\n\n\n`);
    assert.equal(rows.length, 2);
    assert.deepEqual(rows[1], { prompt: "2+2=", completion: "4" });
    // Line numbers count the blank lines too.
    assertDatasetError(
      () => parseDataset(`\uFEFF${CHAT}\r\n\r\n{"prompt": 1}\r\n`, { source: "train.jsonl" }),
      3,
      'train.jsonl line 3: "prompt" must be a string, got a number',
    );
  });

  test("an empty file, or one of blank lines, is an error", () => {
    assertDatasetError(
      () => parseDataset(""),
      undefined,
      "the dataset: the dataset is empty (no JSON lines)",
    );
    assertDatasetError(
      () => parseDataset("\n  \r\n\n", { source: "eval.jsonl" }),
      undefined,
      "eval.jsonl: the dataset is empty (no JSON lines)",
    );
  });

  const BAD_LINES: [string, string][] = [
    ["{not json", "not valid JSON"],
    ["[1, 2]", "expected a JSON object, got an array"],
    ['"text"', "expected a JSON object, got a string"],
    ["{}", 'expected "messages", or "prompt" and "completion"'],
    ['{"text": "hi"}', 'expected "messages", or "prompt" and "completion"; found "text"'],
    ['{"messages": []}', '"messages" must be a non-empty array'],
    ['{"messages": {"role": "user"}}', '"messages" must be a non-empty array'],
    [
      '{"messages": [{"role": "user", "content": "hi"}]}',
      '"messages" must contain at least one assistant message',
    ],
    [
      '{"messages": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}]}',
      '"messages[1].role" must be one of system, user, assistant, tool',
    ],
    ['{"messages": [{"content": "b"}]}', '"messages[0].role" must be one of system, user, assistant, tool'],
    ['{"messages": [{"role": "assistant"}]}', '"messages[0].content" is missing'],
    [
      '{"messages": [{"role": "assistant", "content": null}]}',
      '"messages[0].content" must be a string, got null',
    ],
    [
      '{"messages": [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]}',
      '"messages[0].content" must be a string, got an array',
    ],
    [
      '{"messages": [{"role": "assistant", "contnet": "x"}]}',
      '"messages[0]" has an unknown key "contnet" (allowed: role, content, name, weight, tool_calls, tool_call_id)',
    ],
    ['{"messages": ["hi"]}', '"messages[0]" must be an object with "role" and "content", got a string'],
    [
      '{"messages": [{"role": "assistant", "content": "x", "weight": 2}]}',
      '"messages[0].weight" must be 0 or 1',
    ],
    [
      '{"messages": [{"role": "user", "content": "x", "weight": 1}, {"role": "assistant", "content": "y"}]}',
      '"messages[0].weight" is only allowed on assistant messages',
    ],
    [
      '{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "weight": 0}]}',
      "every assistant message has weight 0, so there is nothing to train on",
    ],
    [
      '{"messages": [{"role": "assistant", "content": "x", "name": 3}]}',
      '"messages[0].name" must be a string',
    ],
    [
      '{"messages": [{"role": "assistant", "content": "x"}], "functions": []}',
      'unknown key "functions" next to "messages"',
    ],
    ['{"prompt": "a"}', '"completion" is missing'],
    ['{"completion": "a"}', '"prompt" is missing'],
    ['{"prompt": "a", "completion": 5}', '"completion" must be a string, got a number'],
    [
      '{"prompt": "a", "completion": "b", "label": 1}',
      'unknown key "label" next to "prompt" and "completion"',
    ],
  ];

  test("every malformed line is reported with the file, its line number and the problem", () => {
    for (const [line, problem] of BAD_LINES) {
      const text = `${CHAT}\n\n${COMPLETION}\n${line}\n${CHAT}\n`;
      const error = assertDatasetError(
        () => parseDataset(text, { source: "train.jsonl" }),
        4,
        new RegExp(`^train\\.jsonl line 4: ${problem.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
      );
      assert.equal(error.file, "train.jsonl");
    }
  });

  test("without a source the message starts with the line", () => {
    assertDatasetError(
      () => parseDataset(`${CHAT}\n{"prompt": 1, "completion": "x"}`),
      2,
      /^line 2: "prompt"/,
    );
  });

  test("the first bad line is the one reported", () => {
    assertDatasetError(() => parseDataset(`${CHAT}\n{bad\n[]\n`), 2, /^line 2: not valid JSON/);
  });
});

describe("readDataset", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-dataset-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("reads a file the same way parseDataset reads its text", async () => {
    const text = `\uFEFF${CHAT}\r\n\r\n${COMPLETION}\n`;
    await writeFile(join(dir, "small.jsonl"), text);
    assert.deepEqual(await readDataset(join(dir, "small.jsonl")), parseDataset(text));
  });

  test("streams a large file with multi-byte characters across chunk boundaries", async () => {
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const answer = `${"é🙂日".repeat(i % 7)} answer ${i}`;
      lines.push(
        i % 3 === 0
          ? JSON.stringify({ prompt: `q${i}`, completion: answer })
          : JSON.stringify({
              messages: [
                { role: "user", content: `question ${i}` },
                { role: "assistant", content: answer },
              ],
            }),
      );
      if (i % 100 === 0) lines.push("");
    }
    const text = lines.join("\r\n");
    const path = join(dir, "large.jsonl");
    await writeFile(path, text);
    const rows = await readDataset(path);
    assert.equal(rows.length, 20_000);
    assert.deepEqual(rows, parseDataset(text));
  });

  test("errors name the file and line; error.file carries the path", async () => {
    const path = join(dir, "train.jsonl");
    await writeFile(path, `${CHAT}\n${COMPLETION}\n{"messages": [{"role": "user", "content": "x"}]}\n`);
    await assert.rejects(readDataset(path), (error: unknown) => {
      assert.ok(error instanceof EngineError);
      assert.equal(error.code, "invalid_dataset");
      assert.equal(
        error.message,
        'train.jsonl line 3: "messages" must contain at least one assistant message',
      );
      assert.equal(error.line, 3);
      assert.equal(error.file, path);
      return true;
    });
  });

  test("a bad line at the very end without a newline is still reported", async () => {
    const path = join(dir, "tail.jsonl");
    await writeFile(path, `${CHAT}\n${COMPLETION}\n{"prompt": "x"`);
    await assert.rejects(readDataset(path), /tail\.jsonl line 3: not valid JSON/);
  });

  test("invalid UTF-8 is reported with its line", async () => {
    const path = join(dir, "latin1.jsonl");
    await writeFile(
      path,
      Buffer.concat([
        Buffer.from(`${CHAT}\n${COMPLETION}\n{"prompt": "caf`),
        Buffer.from([0xe9]),
        Buffer.from('"}\n'),
      ]),
    );
    await assert.rejects(readDataset(path), (error: unknown) => {
      assert.ok(error instanceof EngineError);
      assert.equal(error.message, "latin1.jsonl line 3: not valid UTF-8 text");
      assert.equal(error.line, 3);
      return true;
    });
  });

  test("missing file, folder and empty file", async () => {
    await assert.rejects(
      readDataset(join(dir, "nope.jsonl")),
      (error: unknown) =>
        error instanceof EngineError &&
        error.code === "missing_file" &&
        /nope\.jsonl: file not found/.test(error.message),
    );
    await assert.rejects(readDataset(dir), /is a folder, not a file/);
    await writeFile(join(dir, "empty.jsonl"), "\n\n");
    await assert.rejects(readDataset(join(dir, "empty.jsonl")), /empty\.jsonl: the dataset is empty/);
  });
});

describe("rows with tools", () => {
  const TOOLS = [
    {
      type: "function",
      function: {
        name: "lookup_order",
        description: "Find an order",
        parameters: {
          type: "object",
          properties: { order_id: { type: "string" } },
          required: ["order_id"],
          additionalProperties: false,
        },
        strict: true,
      },
    },
  ];
  const CALL = {
    id: "call_1",
    type: "function",
    function: { name: "lookup_order", arguments: '{"order_id": "A1"}' },
  };
  const row = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ tools: TOOLS, messages, ...extra });
  const CONVERSATION = [
    { role: "user", content: "Where is A1?" },
    { role: "assistant", content: null, tool_calls: [CALL], weight: 1 },
    { role: "tool", tool_call_id: "call_1", content: '{"status": "shipped"}' },
    { role: "assistant", content: "It has shipped." },
  ];

  test("reads tools, calls with null or absent content, tool results and parallel_tool_calls", () => {
    const [parsed] = parseDataset(row(CONVERSATION, { parallel_tool_calls: false }));
    assert.deepEqual(parsed, {
      tools: TOOLS,
      messages: [
        { role: "user", content: "Where is A1?" },
        { role: "assistant", content: "", tool_calls: [CALL], weight: 1 },
        { role: "tool", tool_call_id: "call_1", content: '{"status": "shipped"}' },
        { role: "assistant", content: "It has shipped." },
      ],
    });
    const absent = [CONVERSATION[0], { role: "assistant", tool_calls: [CALL] }];
    assert.equal((parseDataset(row(absent))[0] as { messages: unknown[] }).messages.length, 2);
  });

  const BAD: [string, string][] = [
    [
      row([
        CONVERSATION[0],
        { role: "assistant", tool_calls: [{ ...CALL, function: { ...CALL.function, name: "cancel" } }] },
      ]),
      '"messages[1].tool_calls[0].function.name" calls an unknown tool "cancel" (the row\'s tools are lookup_order)',
    ],
    [
      JSON.stringify({ messages: [CONVERSATION[0], { role: "assistant", tool_calls: [CALL] }] }),
      '"messages[1].tool_calls[0].function.name" calls an unknown tool "lookup_order" (the row has no "tools")',
    ],
    [
      row([
        CONVERSATION[0],
        {
          role: "assistant",
          tool_calls: [{ ...CALL, function: { ...CALL.function, arguments: "{order_id: A1}" } }],
        },
      ]),
      '"messages[1].tool_calls[0].function.arguments" is not JSON',
    ],
    [
      row([
        CONVERSATION[0],
        {
          role: "assistant",
          tool_calls: [{ ...CALL, function: { ...CALL.function, arguments: { order_id: "A1" } } }],
        },
      ]),
      '"messages[1].tool_calls[0].function.arguments" must be a string, got an object',
    ],
    [
      row([
        CONVERSATION[0],
        { role: "assistant", tool_calls: [{ ...CALL, function: { ...CALL.function, arguments: "[1]" } }] },
      ]),
      '"messages[1].tool_calls[0].function.arguments" must be the JSON text of an object, got an array',
    ],
    [
      row([CONVERSATION[0], { role: "tool", tool_call_id: "call_9", content: "{}" }, CONVERSATION[3]]),
      '"messages[1].tool_call_id" "call_9" answers no tool call made before it',
    ],
    [
      row([CONVERSATION[0], { role: "tool", content: "{}" }, CONVERSATION[3]]),
      '"messages[1].tool_call_id" is missing',
    ],
    [
      row([CONVERSATION[0], { role: "assistant", tool_calls: [CALL, CALL] }]),
      '"messages[1].tool_calls[1].id" "call_1" is used twice',
    ],
    [
      row([CONVERSATION[0], { role: "assistant", tool_calls: [CALL], extra: 1 }]),
      '"messages[1]" has an unknown key "extra"',
    ],
    [
      row([{ ...CONVERSATION[0], tool_calls: [CALL] }, CONVERSATION[3]]),
      '"messages[0].tool_calls" is only allowed on assistant messages',
    ],
    [
      row([{ ...CONVERSATION[0], tool_call_id: "x" }, CONVERSATION[3]]),
      '"messages[0].tool_call_id" is only allowed on tool messages',
    ],
    [
      row([CONVERSATION[0], { role: "assistant", content: null }]),
      '"messages[1].content" must be a string, got null',
    ],
    [
      row([CONVERSATION[0], { role: "assistant", tool_calls: [{ ...CALL, type: "code" }] }]),
      '"messages[1].tool_calls[0].type" must be "function"',
    ],
    [
      row([
        CONVERSATION[0],
        { role: "assistant", tool_calls: [{ ...CALL, function: { ...CALL.function, extra: 1 } }] },
      ]),
      '"messages[1].tool_calls[0].function" has an unknown key "extra"',
    ],
    [JSON.stringify({ tools: {}, messages: CONVERSATION }), '"tools" must be an array, got an object'],
    [
      JSON.stringify({ tools: [{ type: "retrieval" }], messages: CONVERSATION }),
      '"tools[0].type" must be "function"',
    ],
    [
      JSON.stringify({ tools: [{ ...TOOLS[0], extra: 1 }], messages: CONVERSATION }),
      '"tools[0]" has an unknown key "extra"',
    ],
    [
      JSON.stringify({
        tools: [{ type: "function", function: { name: "look up" } }],
        messages: CONVERSATION,
      }),
      '"tools[0].function.name" must be 1 to 64 letters',
    ],
    [
      JSON.stringify({
        tools: [{ type: "function", function: { name: "f", colour: 1 } }],
        messages: CONVERSATION,
      }),
      '"tools[0].function" has an unknown key "colour"',
    ],
    [
      JSON.stringify({ tools: [TOOLS[0], TOOLS[0]], messages: CONVERSATION }),
      '"tools[1].function.name" "lookup_order" is defined twice',
    ],
    [
      JSON.stringify({
        tools: [
          {
            type: "function",
            function: {
              name: "lookup_order",
              parameters: { type: "object", properties: { order_id: { type: "string", pattern: "^A" } } },
            },
          },
        ],
        messages: CONVERSATION,
      }),
      '"tools[0].function.parameters": /properties/order_id/pattern',
    ],
    [
      JSON.stringify({ tools: TOOLS, messages: CONVERSATION, parallel_tool_calls: "yes" }),
      '"parallel_tool_calls" must be true or false',
    ],
  ];

  test("every malformed kind is refused with its line number", () => {
    const deep = `${'{"type":"object","properties":{"a":'.repeat(3000)}{"type":"string"}${"}}".repeat(3000)}`;
    const nested = `{"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}],"messages":${JSON.stringify(CONVERSATION)}}`;
    for (const [line, problem] of [
      ...BAD,
      [nested, '"tools[0].function.parameters": /properties/a/'] as const,
    ]) {
      assertDatasetError(
        () => parseDataset(`${CHAT}\n${line}\n`, { source: "tools.jsonl" }),
        2,
        new RegExp(`^tools\\.jsonl line 2: ${problem.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
      );
    }
  });
});
