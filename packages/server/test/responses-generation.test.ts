// POST /v1/responses generating as chat completions do, through a real
// server process with the official openai npm client: logprobs (include
// message.output_text.logprobs, top_logprobs) equal to chat completions' for
// the same conversation (chat-parameters.test.ts checks those against the
// engine's log-softmax), streaming agreeing token for token with the whole
// answer at temperature 0 (text with its logprobs, a function call, a JSON
// output), and the prompt limits (context_length_exceeded).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import {
  call,
  deploymentWithKey,
  edgeClient,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
} from "./harness.js";

const WEATHER_TOOL: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string", enum: ["Oslo", "Lima"] } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
};

describe("the Responses API generates as chat completions do", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let id: Identity;
  let openai: OpenAI;
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    const { deployment, key } = await deploymentWithKey(server.apiUrl, id, `responses-gen-${process.pid}`);
    openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
  });
  after(() => server?.cleanup());

  it("logprobs: include message.output_text.logprobs and top_logprobs give chat completions' logprobs for the same conversation", async () => {
    const response = await openai.responses.create({
      model: "x",
      instructions: "Answer briefly.",
      input: "Tell me about the sea.",
      max_output_tokens: 8,
      temperature: 0,
      include: ["message.output_text.logprobs"],
      top_logprobs: 3,
    });
    assert.equal((response as unknown as { top_logprobs: number }).top_logprobs, 3, "echoed");
    const part = response.output[0].type === "message" ? response.output[0].content[0] : null;
    assert.ok(part?.type === "output_text");
    const logprobs = part.logprobs ?? [];
    assert.equal(logprobs.length, response.usage?.output_tokens, "one entry per token");
    assert.equal(Buffer.from(logprobs.flatMap((e) => e.bytes)).toString("utf8"), response.output_text);
    for (const entry of logprobs) {
      assert.equal(entry.top_logprobs.length, 3);
      assert.equal(entry.top_logprobs[0].logprob, entry.logprob, "greedy takes the most likely token");
    }
    // chat-parameters.test.ts checks chat's logprobs against the engine's log-softmax (1e-4)
    const chat = await openai.chat.completions.create({
      model: "x",
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "Tell me about the sea." },
      ],
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    assert.deepEqual(logprobs, chat.choices[0].logprobs?.content);
    const plain = await openai.responses.create({ model: "x", input: "hi", max_output_tokens: 2 });
    assert.deepEqual(
      plain.output[0].type === "message" && plain.output[0].content[0].type === "output_text"
        ? plain.output[0].content[0].logprobs
        : null,
      [],
      "no logprobs unless asked",
    );
  });

  it("streaming and non-streaming agree token for token at temperature 0, logprobs included", async () => {
    const params = {
      model: "x",
      input: "Tell me about the sea.",
      max_output_tokens: 10,
      temperature: 0,
      include: ["message.output_text.logprobs" as const],
      top_logprobs: 2,
    };
    const whole = await openai.responses.create(params);
    const wholePart = whole.output[0].type === "message" ? whole.output[0].content[0] : null;
    assert.ok(wholePart?.type === "output_text");
    const stream = openai.responses.stream(params);
    let deltas = "";
    const streamed: unknown[] = [];
    let done: unknown[] = [];
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") {
        deltas += event.delta;
        streamed.push(...event.logprobs);
      }
      if (event.type === "response.output_text.done") done = event.logprobs;
    }
    const final = await stream.finalResponse();
    assert.equal(deltas, whole.output_text);
    assert.equal(streamed.length, wholePart.logprobs?.length);
    assert.deepEqual(streamed, wholePart.logprobs);
    assert.deepEqual(done, wholePart.logprobs);
    const finalPart = final.output[0].type === "message" ? final.output[0].content[0] : null;
    assert.deepEqual(finalPart?.type === "output_text" ? finalPart.logprobs : null, wholePart.logprobs);
    assert.deepEqual(final.usage, whole.usage);
  });

  it("at temperature 0 a streamed function call and a streamed JSON output are the whole answer's", async () => {
    const called = {
      model: "x",
      input: "What is the weather in Oslo?",
      tools: [WEATHER_TOOL],
      tool_choice: { type: "function" as const, name: "get_weather" },
      temperature: 0,
    };
    const callsOf = (response: OpenAI.Responses.Response) =>
      response.output.flatMap((item) =>
        item.type === "function_call" ? [[item.name, item.arguments, item.status]] : [],
      );
    const whole = await openai.responses.create(called);
    const streamed = await openai.responses.stream(called).finalResponse();
    assert.ok(callsOf(whole).length >= 1);
    assert.deepEqual(callsOf(streamed), callsOf(whole));
    assert.deepEqual(streamed.usage, whole.usage);
    const json = {
      model: "x",
      input: "Rate the sea.",
      temperature: 0,
      text: {
        format: {
          type: "json_schema" as const,
          name: "rating",
          schema: {
            type: "object",
            properties: { mood: { type: "string", enum: ["calm", "rough"] } },
            required: ["mood"],
            additionalProperties: false,
          },
        },
      },
    };
    const wholeJson = await openai.responses.create(json);
    const streamedJson = await openai.responses.stream(json).finalResponse();
    assert.equal(streamedJson.output_text, wholeJson.output_text);
    assert.ok(["calm", "rough"].includes(JSON.parse(wholeJson.output_text).mood));
  });

  it("prompt limits apply as on chat completions: context_length_exceeded, streamed or not, before any event", async () => {
    const models = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
    const contextLength = models.body.models.find((m: { name: string }) => m.name === TINY_MODEL)
      .contextLength as number;
    const refusal = async (params: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, "model">) => {
      for (const stream of [false, true]) {
        const error = await openai.responses
          .create({ model: "x", ...params, stream } as OpenAI.Responses.ResponseCreateParamsNonStreaming)
          .then(
            () => assert.fail("answered 200"),
            (e: unknown) => e,
          );
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.code, "context_length_exceeded", error.message);
      }
    };
    // by its bytes, before tokenizing (five items under the 200,000-character limit of one)
    await refusal({
      input: Array.from({ length: 5 }, () => ({ role: "user", content: "x".repeat(190_000) })),
    });
    // in tokens, after tokenizing (the tiny model's tokens are single bytes)
    await refusal({ input: "x".repeat(contextLength) });
    // an explicit max_output_tokens that does not fit beside the input
    await refusal({ input: "hi", max_output_tokens: contextLength });
  });
});
