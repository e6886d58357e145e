// The chat-completions parameters accepted with OpenAI's meaning
// (max_completion_tokens, user, metadata, store: false,
// stream_options.include_usage), messages as the official clients send them
// (text content parts, the developer role), and each parameter svc refuses,
// unknown keys included, answered 400 with its param, through a real server
// process with the official openai npm client. What the honoured parameters
// compute (logprobs, n, penalties, logit_bias): chat-parameters.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadModel, type Model } from "@svc/engine";
import OpenAI from "openai";
import {
  deploymentWithKey,
  edgeClient,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  tinyModel,
} from "./harness.js";

const MESSAGES: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Tell me about the sea." }];
type Params = OpenAI.ChatCompletionCreateParamsNonStreaming;

describe("chat parameters accepted with OpenAI's meaning or refused naming them", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let id: Identity;
  let openai: OpenAI;
  let model: Model;
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    const { deployment, key } = await deploymentWithKey(server.apiUrl, id, `params-refused-${process.pid}`);
    openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
    model = await loadModel(await tinyModel());
  });
  after(() => server?.cleanup());

  const create = (params: Partial<Params>) =>
    openai.chat.completions.create({ model: "x", messages: MESSAGES, ...params } as Params);

  it("max_completion_tokens, user, metadata, store: false and stream_options.include_usage are accepted with OpenAI's meaning", async () => {
    const completion = await create({
      max_completion_tokens: 3,
      user: "user-1",
      safety_identifier: "s-1",
      metadata: { purpose: "test" },
      store: false,
      service_tier: "auto",
      modalities: ["text"],
      seed: 1,
    });
    assert.equal(completion.usage?.completion_tokens, 3);
    const same = await create({ max_tokens: 4, max_completion_tokens: 4, seed: 1 });
    assert.equal(same.usage?.completion_tokens, 4, "both names, one value");
    const chunksOf = async (includeUsage: boolean | undefined) => {
      const stream = await openai.chat.completions.create({
        model: "x",
        messages: MESSAGES,
        max_tokens: 3,
        stream: true,
        ...(includeUsage === undefined ? {} : { stream_options: { include_usage: includeUsage } }),
      });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    };
    const withUsage = await chunksOf(true);
    const last = withUsage[withUsage.length - 1];
    assert.deepEqual(last.choices, [], "usage comes in a chunk of its own");
    assert.equal(last.usage?.completion_tokens, 3);
    for (const chunk of withUsage.slice(0, -1)) assert.equal(chunk.usage, null);
    for (const chunk of [...(await chunksOf(undefined)), ...(await chunksOf(false))])
      assert.equal(chunk.usage ?? null, null, "no usage unless asked");
  });

  it("messages: text content parts read as their joined text, and developer as system", async () => {
    const plain = await create({
      temperature: 0,
      max_tokens: 6,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Tell me about the sea." },
      ],
    });
    const parts = await create({
      temperature: 0,
      max_tokens: 6,
      messages: [
        { role: "developer", content: [{ type: "text", text: "Be brief." }] },
        {
          role: "user",
          content: [
            { type: "text", text: "Tell me " },
            { type: "text", text: "about the sea." },
          ],
        },
      ],
    });
    assert.equal(parts.choices[0].message.content, plain.choices[0].message.content);
    assert.deepEqual(parts.usage, plain.usage, "the same prompt");
  });

  it("refuses what a text model cannot honour, and unknown keys, with 400 naming the param", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ modalities: ["text", "audio"] }, "modalities"],
      [{ audio: { voice: "alloy", format: "wav" } }, "audio"],
      [{ prediction: { type: "content", content: "x" } }, "prediction"],
      [{ reasoning_effort: "low" }, "reasoning_effort"],
      [{ web_search_options: {} }, "web_search_options"],
      [{ verbosity: "low" }, "verbosity"],
      [{ functions: [{ name: "f" }] }, "functions"],
      [{ function_call: "auto" }, "function_call"],
      [{ store: true }, "store"],
      [{ service_tier: "flex" }, "service_tier"],
      [{ not_a_parameter: 1 }, "not_a_parameter"],
      [{ n: 17 }, "n"],
      [{ n: 0 }, "n"],
      [{ logprobs: true, top_logprobs: 21 }, "top_logprobs"],
      [{ top_logprobs: 2 }, "top_logprobs"],
      [{ frequency_penalty: 2.5 }, "frequency_penalty"],
      [{ presence_penalty: -3 }, "presence_penalty"],
      [{ logit_bias: { abc: 1 } }, "logit_bias"],
      [{ logit_bias: { "5": 101 } }, "logit_bias.5"],
      [{ logit_bias: { [String(model.tokenizer.vocabSize)]: 1 } }, "logit_bias"],
      [{ max_tokens: 4, max_completion_tokens: 5 }, "max_completion_tokens"],
      [{ stream_options: { include_usage: true } }, "stream_options"],
      [{ metadata: { k: 5 } }, "metadata.k"],
      [{ messages: [{ role: "user", content: "hi", name: "ann" }] }, "messages[0].name"],
      [
        { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] },
        "messages[0].content[0].type",
      ],
      [{ messages: [{ role: "user", content: [] }] }, "messages[0].content"],
    ];
    for (const [extra, param] of cases) {
      await assert.rejects(create(extra), (e: unknown) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(extra)}: ${String(e)}`);
        assert.equal(e.param, param, `${JSON.stringify(extra)}: ${e.message}`);
        return true;
      });
    }
  });
});
