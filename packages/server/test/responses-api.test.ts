// POST /v1/responses through a real server process with the official openai
// npm client, unmodified: text, streaming (client.responses.stream, the
// semantic events, agreeing with the whole answer at temperature 0), a tool
// call round trip with function_call / function_call_output items, JSON
// Schema output by constrained decoding, refusals naming their param, keys and
// usage as on chat completions, the cloud API's route
// (a project API key too), and the official Python client's responses.create
// with logprobs (skipped, counted, where python3 has no openai package).
// Logprobs, token-for-token streaming and prompt limits:
// responses-generation.test.ts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { needs } from "@svc/engine/testing";
import OpenAI from "openai";
import {
  call,
  deploymentWithKey,
  edgeClient,
  type Identity,
  identityWithFinishedJob,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  until,
} from "./harness.js";

const run = promisify(execFile);

const ORDER_TOOL: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "lookup_order",
  description: "Find an order",
  parameters: {
    type: "object",
    properties: { order_id: { type: "string", enum: ["A17", "B2"] } },
    required: ["order_id"],
    additionalProperties: false,
  },
  strict: true,
};

describe("the Responses API (POST /v1/responses)", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let id: Identity;
  let openai: OpenAI;
  let deployment: { id: string; slug: string };
  let key: { id: string; plaintext: string };
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    ({ deployment, key } = await deploymentWithKey(server.apiUrl, id, `responses-${process.pid}`));
    openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
  });
  after(() => server?.cleanup());

  it("client.responses.create: a string input and instructions give a completed response with output_text and usage", async () => {
    const response = await openai.responses.create({
      model: "x",
      instructions: "Answer briefly.",
      input: "Tell me about the sea.",
      max_output_tokens: 6,
      temperature: 0,
    });
    assert.equal(response.object, "response");
    assert.match(response.id, /^resp_/);
    assert.equal(response.output[0].type, "message");
    assert.equal(typeof response.output_text, "string");
    assert.equal(response.usage?.output_tokens, 6);
    assert.equal(response.status, "incomplete", "max_output_tokens reached");
    assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(response.instructions, "Answer briefly.");
    assert.equal((response as unknown as { store: boolean }).store, false, "nothing is stored");
  });

  it("client.responses.stream: the semantic events in order, and the same text as the whole answer at temperature 0", async () => {
    const params = {
      model: "x",
      input: [{ role: "user" as const, content: "Say hi." }],
      max_output_tokens: 8,
      temperature: 0,
    };
    const whole = await openai.responses.create(params);
    const types: string[] = [];
    let deltas = "";
    const stream = openai.responses.stream(params);
    stream.on("response.output_text.delta", (event) => {
      deltas += event.delta;
    });
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    assert.equal(types[0], "response.created");
    assert.equal(types[1], "response.in_progress");
    assert.ok(types.includes("response.output_item.added"));
    assert.ok(types.includes("response.content_part.added"));
    assert.ok(types.includes("response.output_text.done"));
    assert.ok(types.includes("response.output_item.done"));
    assert.ok(["response.completed", "response.incomplete"].includes(types[types.length - 1]));
    assert.equal(deltas, whole.output_text);
    assert.equal(final.output_text, whole.output_text);
    assert.deepEqual(final.usage, whole.usage);
  });

  it("a tool call round trip: function_call out, function_call_output back, streamed and not", async () => {
    const first = await openai.responses.create({
      model: "x",
      input: "Where is order A17?",
      tools: [ORDER_TOOL],
      tool_choice: "required",
      temperature: 0.8,
    });
    const calls = first.output.filter((item) => item.type === "function_call");
    assert.ok(calls.length >= 1, JSON.stringify(first.output));
    for (const c of calls) {
      assert.equal(c.name, "lookup_order");
      assert.ok(["A17", "B2"].includes(JSON.parse(c.arguments).order_id));
      assert.match(c.call_id, /^call_/);
    }
    const answer = await openai.responses.create({
      model: "x",
      input: [
        { role: "user", content: "Where is order A17?" },
        ...first.output,
        ...calls.map((c) => ({
          type: "function_call_output" as const,
          call_id: c.call_id,
          output: '{"status":"shipped"}',
        })),
      ] as OpenAI.Responses.ResponseInput,
      tools: [ORDER_TOOL],
      tool_choice: "none",
      max_output_tokens: 5,
    });
    assert.equal(answer.output[0].type, "message");
    // streamed, a call arrives as function_call items with their argument deltas
    const stream = openai.responses.stream({
      model: "x",
      input: "Where is order B2?",
      tools: [ORDER_TOOL],
      tool_choice: { type: "function", name: "lookup_order" },
    });
    let argumentDeltas = "";
    stream.on("response.function_call_arguments.delta", (event) => {
      argumentDeltas += event.delta;
    });
    const streamed = await stream.finalResponse();
    const streamedCalls = streamed.output.filter((item) => item.type === "function_call");
    assert.ok(streamedCalls.length >= 1);
    assert.equal(argumentDeltas, streamedCalls.map((c) => c.arguments).join(""));
    // an output that answers no call is refused naming it
    await assert.rejects(
      openai.responses.create({
        model: "x",
        input: [{ type: "function_call_output", call_id: "call_nope", output: "x" }],
      }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "input[0].call_id",
    );
  });

  it("text.format json_schema: the output is JSON of the schema, by constrained decoding", async () => {
    for (const stream of [false, true]) {
      const params = {
        model: "x",
        input: "Rate the sea.",
        temperature: 1,
        text: {
          format: {
            type: "json_schema" as const,
            name: "rating",
            schema: {
              type: "object",
              properties: { mood: { type: "string", enum: ["calm", "rough"] }, stars: { type: "integer" } },
              required: ["mood", "stars"],
              additionalProperties: false,
            },
            strict: true,
          },
        },
      };
      const response = stream
        ? await openai.responses.stream(params).finalResponse()
        : await openai.responses.create(params);
      const parsed = JSON.parse(response.output_text);
      assert.ok(["calm", "rough"].includes(parsed.mood));
      assert.ok(Number.isInteger(parsed.stars));
    }
  });

  it("refuses what svc cannot honour, previous_response_id first (nothing is stored), with 400 naming the param", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ previous_response_id: "resp_123" }, "previous_response_id"],
      [{ store: true }, "store"],
      [{ reasoning: { effort: "low" } }, "reasoning"],
      [{ background: true }, "background"],
      [{ truncation: "auto" }, "truncation"],
      [{ conversation: "conv_1" }, "conversation"],
      [{ prompt: { id: "pmpt_1" } }, "prompt"],
      [{ max_tool_calls: 1 }, "max_tool_calls"],
      [{ service_tier: "flex" }, "service_tier"],
      [{ text: { verbosity: "low" } }, "text.verbosity"],
      [{ include: ["reasoning.encrypted_content"] }, "include[0]"],
      [{ include: ["message.output_text.logprobs", "web_search_call.results"] }, "include[1]"],
      [{ top_logprobs: 2 }, "top_logprobs"],
      [{ include: ["message.output_text.logprobs"], top_logprobs: 21 }, "top_logprobs"],
      [{ include: ["message.output_text.logprobs"], tools: [ORDER_TOOL] }, "include"],
      [{ tools: [{ type: "web_search" }] }, "tools[0].type"],
      [
        { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
        "input[0].content[0].type",
      ],
      [{ input: [{ type: "reasoning", summary: [] }] }, "input[0].type"],
      [{ whatever: 1 }, "whatever"],
      [{ max_output_tokens: 0 }, "max_output_tokens"],
      [
        { tools: [ORDER_TOOL], tool_choice: { type: "function", name: "other" } },
        "tool_choice.function.name",
      ],
    ];
    for (const [extra, param] of cases) {
      await assert.rejects(
        openai.responses.create({
          model: "x",
          input: "hi",
          ...extra,
        } as OpenAI.Responses.ResponseCreateParamsNonStreaming),
        (e: unknown) => {
          assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(extra)}: ${String(e)}`);
          assert.equal(e.param, param, `${JSON.stringify(extra)}: ${e.message}`);
          return true;
        },
      );
    }
  });

  it("keys and usage apply as on chat completions", async () => {
    await assert.rejects(
      edgeClient(server.edgeUrl, deployment.slug, "svc_live_wrong").responses.create({
        model: "x",
        input: "hi",
      }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
    const { deployment: metered, key: meteredKey } = await deploymentWithKey(
      server.apiUrl,
      id,
      `responses-usage-${process.pid}`,
    );
    const client = edgeClient(server.edgeUrl, metered.slug, meteredKey.plaintext);
    const a = await client.responses.create({ model: "x", input: "one", max_output_tokens: 3 });
    const b = await client.responses
      .stream({ model: "x", input: "two", max_output_tokens: 4 })
      .finalResponse();
    const expected = {
      requests: 2,
      promptTokens: (a.usage?.input_tokens ?? 0) + (b.usage?.input_tokens ?? 0),
      completionTokens: (a.usage?.output_tokens ?? 0) + (b.usage?.output_tokens ?? 0),
    };
    await until("usage flushed", async () => {
      const listed = await call(server.apiUrl, "GET", `/v1/endpoints/${metered.id}/keys`, {
        token: id.token,
      });
      const usage = listed.body.keys[0].usage;
      return (
        usage.requests === expected.requests &&
        usage.promptTokens === expected.promptTokens &&
        usage.completionTokens === expected.completionTokens
      );
    });
  });

  it("the cloud API serves POST /v1/responses to its bearer token, model a base or a fine-tuned (ft:) model", async () => {
    const { id: owner, jobId } = await identityWithFinishedJob(server.apiUrl);
    const cloud = new OpenAI({
      apiKey: owner.token,
      baseURL: `${server.apiUrl}/v1`,
      organization: owner.orgSlug,
      project: owner.projectSlug,
      maxRetries: 0,
    });
    const response = await cloud.responses.create({ model: TINY_MODEL, input: "hi", max_output_tokens: 3 });
    assert.equal(response.model, TINY_MODEL);
    assert.equal(response.usage?.output_tokens, 3);
    const tuned = (await cloud.fineTuning.jobs.retrieve(`ftjob-${jobId}`)).fine_tuned_model ?? "";
    assert.ok(tuned.startsWith("ft:"), tuned);
    const fromAdapter = await cloud.responses.create({ model: tuned, input: "hi", max_output_tokens: 2 });
    assert.equal(fromAdapter.model, tuned);
    assert.equal(fromAdapter.usage?.output_tokens, 2);
    // a project API key is its project's scope here as on the cloud API's chat completions
    const issued = await call(server.apiUrl, "POST", `/v1/project-keys?${owner.scope}`, {
      token: owner.token,
      json: { label: "responses" },
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const keyed = new OpenAI({
      apiKey: issued.body.key.plaintext,
      baseURL: `${server.apiUrl}/v1`,
      maxRetries: 0,
    });
    const byKey = await keyed.responses.create({
      model: tuned,
      input: "hi",
      max_output_tokens: 2,
      temperature: 0,
    });
    const byChat = await keyed.chat.completions.create({
      model: tuned,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 2,
      temperature: 0,
    });
    assert.equal(byKey.output_text, byChat.choices[0].message.content, "the same generation as chat");
    await call(server.apiUrl, "DELETE", `/v1/project-keys/${issued.body.key.id}?${owner.scope}`, {
      token: owner.token,
    });
    await assert.rejects(
      keyed.responses.create({ model: tuned, input: "hi" }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
      "a revoked key fails on its next request",
    );
    await assert.rejects(
      cloud.responses.create({ model: "no/such-model-here", input: "hi" }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "model",
    );
    await assert.rejects(
      cloud.responses.create({ model: "hi", input: "hi", previous_response_id: "resp_1" }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "previous_response_id",
    );
    await assert.rejects(
      new OpenAI({ apiKey: "nope", baseURL: `${server.apiUrl}/v1`, maxRetries: 0 }).responses.create({
        model: TINY_MODEL,
        input: "hi",
      }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
  });

  it("the official Python client's responses.create, logprobs included", async (t) => {
    const python = process.env.SVC_PYTHON ?? "python3";
    const probe = await run(python, ["-c", "import openai"]).then(
      () => true,
      () => false,
    );
    if (!probe) {
      t.skip(needs("openai (Python)", `${python} has no openai package`));
      return;
    }
    const script = `
import json, sys, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
r = client.responses.create(model="x", input="Tell me about the sea.", max_output_tokens=5, temperature=0,
    include=["message.output_text.logprobs"], top_logprobs=2)
lp = [{"bytes": e.bytes, "logprob": e.logprob, "top": len(e.top_logprobs)} for e in r.output[0].content[0].logprobs]
print(json.dumps({"text": r.output_text, "status": r.status, "tokens": r.usage.output_tokens, "logprobs": lp}))
`;
    const { stdout } = await run(python, ["-c", script, openai.baseURL, openai.apiKey ?? ""]);
    const node = await openai.responses.create({
      model: "x",
      input: "Tell me about the sea.",
      max_output_tokens: 5,
      temperature: 0,
      include: ["message.output_text.logprobs"],
      top_logprobs: 2,
    });
    const part = node.output[0].type === "message" ? node.output[0].content[0] : null;
    const logprobs = (part?.type === "output_text" ? (part.logprobs ?? []) : []).map((e) => ({
      bytes: e.bytes,
      logprob: e.logprob,
      top: e.top_logprobs.length,
    }));
    assert.equal(logprobs.length, 5);
    assert.deepEqual(JSON.parse(stdout), {
      text: node.output_text,
      status: node.status,
      tokens: 5,
      logprobs,
    });
  });
});
