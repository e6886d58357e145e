// Tool calling and structured output through real server processes: the
// official openai client reads tool calls from the edge, streamed and not,
// under each tool_choice; response_format json_schema holds even for the tiny
// random model; bad tools and schemas get 400s naming the field or keyword;
// the cloud API's inference route takes the same options; and a tool-use
// dataset trains through the API and its adapter serves tool calls.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import {
  call,
  createJob,
  deploymentWithKey,
  edgeClient,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  uploadDataset,
} from "./harness.js";

const ORDER_SCHEMA = {
  type: "object",
  properties: {
    order_id: { type: "string", enum: ["A17", "B2", "C9"] },
    priority: { type: "integer" },
  },
  required: ["order_id", "priority"],
  additionalProperties: false,
};
const TOOLS: OpenAI.ChatCompletionTool[] = [
  {
    type: "function",
    function: { name: "lookup_order", description: "Find an order", parameters: ORDER_SCHEMA, strict: true },
  },
  {
    type: "function",
    function: {
      name: "create_ticket",
      parameters: {
        type: "object",
        // An enum keeps the random model's arguments short; free strings are covered by response_format.
        properties: { summary: { type: "string", enum: ["late delivery", "refund"] } },
        required: ["summary"],
        additionalProperties: false,
      },
      strict: true,
    },
  },
];
const NAMES = new Set(["lookup_order", "create_ticket"]);
const ASK: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Where is order A17?" }];

/** Each call is one of the tools, with arguments that parse and match its schema's required keys. */
function assertCalls(calls: { id: string; type: string; function: { name: string; arguments: string } }[]) {
  assert.ok(calls.length >= 1);
  for (const c of calls) {
    assert.equal(c.type, "function");
    assert.match(c.id, /^call_/);
    assert.ok(NAMES.has(c.function.name), c.function.name);
    const args = JSON.parse(c.function.arguments);
    if (c.function.name === "lookup_order") {
      assert.deepEqual(Object.keys(args).sort(), ["order_id", "priority"]);
      assert.ok(["A17", "B2", "C9"].includes(args.order_id));
      assert.ok(Number.isInteger(args.priority));
    } else {
      assert.deepEqual(Object.keys(args), ["summary"]);
      assert.ok(["late delivery", "refund"].includes(args.summary));
    }
  }
}

describe("tool calling and structured output", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let id: Identity;
  let openai: OpenAI;
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    const { deployment, key } = await deploymentWithKey(server.apiUrl, id, `tools-${process.pid}`);
    openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
  });
  after(() => server?.cleanup());

  it("tool_choice required: the official client parses the calls, with and without parallel calls", async () => {
    let parallelCalls = 0;
    for (const parallel of [true, false]) {
      for (const seed of [1, 2, 3]) {
        const completion = await openai.chat.completions.create({
          model: "x",
          messages: ASK,
          tools: TOOLS,
          tool_choice: "required",
          parallel_tool_calls: parallel,
          temperature: 1,
          seed,
          max_tokens: 400,
        });
        const choice = completion.choices[0];
        if (parallel && choice.finish_reason === "length") continue; // the random model may keep adding calls
        assert.equal(choice.finish_reason, "tool_calls", JSON.stringify(choice));
        assertCalls(choice.message.tool_calls as never);
        if (!parallel) assert.equal(choice.message.tool_calls?.length, 1);
        else parallelCalls++;
      }
    }
    assert.ok(parallelCalls > 0, "some parallel request ended before max_tokens");
  });

  it("a named tool_choice calls that function; none answers in text", async () => {
    const named = await openai.chat.completions.create({
      model: "x",
      messages: ASK,
      tools: TOOLS,
      tool_choice: { type: "function", function: { name: "create_ticket" } },
      max_tokens: 400,
    });
    const calls = named.choices[0].message.tool_calls ?? [];
    assert.equal(calls.length, 1);
    assert.equal(calls[0].type === "function" && calls[0].function.name, "create_ticket");
    assertCalls(calls as never);

    const none = await openai.chat.completions.create({
      model: "x",
      messages: ASK,
      tools: TOOLS,
      tool_choice: "none",
      max_tokens: 8,
    });
    assert.equal(none.choices[0].message.tool_calls, undefined);
    assert.equal(typeof none.choices[0].message.content, "string");
  });

  it("auto answers either text or well-formed calls", async () => {
    const auto = await openai.chat.completions.create({
      model: "x",
      messages: ASK,
      tools: TOOLS,
      max_tokens: 40,
    });
    const message = auto.choices[0].message;
    if (message.tool_calls?.length) {
      assert.equal(auto.choices[0].finish_reason, "tool_calls");
      assertCalls(message.tool_calls as never);
    } else assert.equal(typeof message.content, "string");
  });

  it("streams tool calls as argument deltas the official client assembles", async () => {
    const stream = await openai.chat.completions.create({
      model: "x",
      messages: ASK,
      tools: TOOLS,
      tool_choice: { type: "function", function: { name: "lookup_order" } },
      stream: true,
      max_tokens: 400,
    });
    const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    let argumentDeltas = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const delta of choice.delta.tool_calls ?? []) {
        if (delta.id)
          calls[delta.index] = {
            id: delta.id,
            type: "function",
            function: { name: delta.function?.name ?? "", arguments: "" },
          };
        if (delta.function?.arguments) {
          calls[delta.index].function.arguments += delta.function.arguments;
          argumentDeltas++;
        }
      }
      finish = choice.finish_reason ?? finish;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, "lookup_order");
    assert.ok(argumentDeltas > 1, "the arguments came in several deltas");
    assertCalls(calls);

    // The client's own helper assembles the same stream.
    const runner = openai.chat.completions.stream({
      model: "x",
      messages: ASK,
      tools: TOOLS,
      tool_choice: "required",
      parallel_tool_calls: false,
      max_tokens: 400,
    });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, "tool_calls");
    assertCalls(final.choices[0].message.tool_calls as never);
  });

  it("a conversation with calls and tool results is accepted as history", async () => {
    const completion = await openai.chat.completions.create({
      model: "x",
      tools: TOOLS,
      max_tokens: 4,
      messages: [
        ...ASK,
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "lookup_order", arguments: '{"order_id": "A17", "priority": 1}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"status": "shipped"}' },
      ],
    });
    assert.equal(completion.object, "chat.completion");
  });

  it("response_format json_schema and json_object give valid JSON even from the tiny random model", async () => {
    const schema = {
      type: "object",
      properties: {
        answer: { type: "string" },
        confidence: { type: "number" },
        tags: { type: "array", items: { type: "string", enum: ["a", "b"] }, maxItems: 3 },
      },
      required: ["answer", "confidence", "tags"],
      additionalProperties: false,
    };
    for (const seed of [1, 2, 3, 4]) {
      const completion = await openai.chat.completions.create({
        model: "x",
        messages: ASK,
        response_format: { type: "json_schema", json_schema: { name: "reply", schema, strict: true } },
        temperature: 1.5,
        seed,
        max_tokens: 600,
      });
      const choice = completion.choices[0];
      assert.equal(choice.finish_reason, "stop", JSON.stringify(choice));
      const value = JSON.parse(choice.message.content as string);
      assert.deepEqual(Object.keys(value).sort(), ["answer", "confidence", "tags"]);
      assert.equal(typeof value.answer, "string");
      assert.equal(typeof value.confidence, "number");
      assert.ok(value.tags.length <= 3 && value.tags.every((t: string) => t === "a" || t === "b"));
    }
    const object = await openai.chat.completions.create({
      model: "x",
      messages: ASK,
      response_format: { type: "json_object" },
      max_tokens: 600,
    });
    const value = JSON.parse(object.choices[0].message.content as string);
    assert.equal(typeof value, "object");
    assert.ok(value !== null && !Array.isArray(value));
  });

  it("bad tools, tool_choice and schemas are 400s naming the field or keyword", async () => {
    const post = (body: Record<string, unknown>) =>
      call(server.edgeUrl, "POST", `/d/${openai.baseURL.split("/d/")[1].split("/")[0]}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${openai.apiKey}` },
        json: { model: "x", messages: ASK, ...body },
      });
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        {
          tools: [
            {
              type: "function",
              function: {
                name: "f",
                parameters: { type: "object", properties: { x: { type: "string", pattern: "^a" } } },
              },
            },
          ],
        },
        /"tools\[0\]\.function\.parameters".*"pattern"/,
      ],
      [
        {
          response_format: {
            type: "json_schema",
            json_schema: { name: "r", schema: { oneOf: [{ type: "string" }] } },
          },
        },
        /"response_format\.json_schema\.schema".*"oneOf"/,
      ],
      [{ tools: [{ type: "function", function: { name: "has space" } }] }, /"tools\[0\]\.function\.name"/],
      [{ tools: [{ type: "retrieval" }] }, /"tools\[0\]\.type"/],
      [
        { tools: TOOLS, tool_choice: { type: "function", function: { name: "nope" } } },
        /"tool_choice\.function\.name" "nope"/,
      ],
      [{ tool_choice: "required" }, /"tool_choice" needs "tools"/],
      [{ tools: TOOLS, tool_choice: "sometimes" }, /"tool_choice"/],
      [{ response_format: { type: "xml" } }, /"response_format\.type"/],
      [
        { messages: [...ASK, { role: "tool", tool_call_id: "call_9", content: "x" }] },
        /"messages\[1\]\.tool_call_id" "call_9" answers no tool call/,
      ],
      [{ messages: [...ASK, { role: "assistant", content: null }] }, /"messages\[1\]\.content" is required/],
      [
        {
          messages: [
            ...ASK,
            {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{x" } }],
            },
          ],
        },
        /"messages\[1\]\.tool_calls\[0\]\.function\.arguments" must be JSON/,
      ],
    ];
    for (const [body, message] of cases) {
      const reply = await post(body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.match(reply.body.error.message, message);
      assert.equal(typeof reply.body.error.code, "string");
    }
    // A schema nested past MAX_SCHEMA_DEPTH (written as text: JSON.stringify would recurse as deep).
    const levels = 3000;
    const deep = `${'{"type":"object","properties":{"a":'.repeat(levels)}{"type":"string"}${"}}".repeat(levels)}`;
    const nested = await call(
      server.edgeUrl,
      "POST",
      `/d/${openai.baseURL.split("/d/")[1].split("/")[0]}/v1/chat/completions`,
      {
        headers: { authorization: `Bearer ${openai.apiKey}`, "content-type": "application/json" },
        body: `{"model":"x","messages":${JSON.stringify(ASK)},"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":${deep}}}}`,
      },
    );
    assert.equal(nested.status, 400, JSON.stringify(nested.body));
    assert.match(
      nested.body.error.message,
      /"response_format\.json_schema\.schema" .*nests more than 64 levels/,
    );

    const schema = await post({
      tools: [
        {
          type: "function",
          function: {
            name: "f",
            parameters: { type: "object", properties: { n: { type: "integer", minimum: 0 } } },
          },
        },
      ],
    });
    assert.equal(schema.body.error.code, "unsupported_schema");
  });

  it("the cloud API's inference route takes tools, toolChoice and responseFormat", async () => {
    const reply = await call(server.apiUrl, "POST", "/v1/inference/chat", {
      token: id.token,
      json: {
        baseModel: TINY_MODEL,
        messages: ASK,
        tools: TOOLS,
        toolChoice: "required",
        parallelToolCalls: false,
        maxTokens: 400,
      },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.choices[0].finish_reason, "tool_calls");
    assertCalls(reply.body.choices[0].message.tool_calls);

    const json = await call(server.apiUrl, "POST", "/v1/inference/chat", {
      token: id.token,
      json: {
        baseModel: TINY_MODEL,
        messages: ASK,
        responseFormat: { type: "json_schema", json_schema: { name: "r", schema: ORDER_SCHEMA } },
        maxTokens: 400,
      },
    });
    assert.equal(json.status, 200);
    assert.ok(["A17", "B2", "C9"].includes(JSON.parse(json.body.choices[0].message.content).order_id));

    const bad = await call(server.apiUrl, "POST", "/v1/inference/chat", {
      token: id.token,
      json: { baseModel: TINY_MODEL, messages: ASK, toolChoice: "required" },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /"toolChoice" needs "tools"/);
  });

  it("a tool-use dataset trains through the API and its adapter serves tool calls", async () => {
    const rows = Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({
        tools: TOOLS,
        messages: [
          { role: "user", content: `Where is order ${["A17", "B2", "C9"][i % 3]}?` },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call_${i}`,
                type: "function",
                function: {
                  name: "lookup_order",
                  arguments: JSON.stringify({ order_id: ["A17", "B2", "C9"][i % 3], priority: 1 }),
                },
              },
            ],
          },
          { role: "tool", tool_call_id: `call_${i}`, content: '{"status": "shipped"}' },
          { role: "assistant", content: "It has shipped." },
        ],
      }),
    );
    const dataset = await uploadDataset(server.apiUrl, id, `${rows.join("\n")}\n`, "tools.jsonl");
    assert.equal(dataset.rows, 8);
    const job = await createJob(server.apiUrl, id, dataset.id, {
      maxSteps: 2,
      saveSteps: 1,
      lora: { r: 4, alpha: 8, maxLength: 1536 },
    });
    const events = await eventsUntilEnd(server.apiUrl, id.token, job.id);
    assert.ok(
      events.some((e) => e.event === "training.completed"),
      JSON.stringify(events.map((e) => e.data)),
    );

    const reply = await call(server.apiUrl, "POST", "/v1/inference/chat", {
      token: id.token,
      json: {
        adapter: { kind: "final", jobId: job.id },
        messages: ASK,
        tools: TOOLS,
        toolChoice: "required",
        parallelToolCalls: false,
        maxTokens: 400,
      },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.choices[0].message.tool_calls.length, 1);
    assertCalls(reply.body.choices[0].message.tool_calls);

    // A malformed row is refused at upload with its line number.
    const bad = await call(server.apiUrl, "POST", `/v1/datasets?${id.scope}&name=bad.jsonl`, {
      token: id.token,
      body: `${rows[0]}\n${rows[1].replace('"name":"lookup_order","arguments"', '"name":"cancel_order","arguments"')}\n`,
      headers: { "content-type": "application/x-ndjson" },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /line 2: .*unknown tool "cancel_order"/);
  });
});
