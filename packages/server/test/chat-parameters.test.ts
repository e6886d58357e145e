// Every OpenAI chat-completions parameter through a real server process, with
// the official openai npm client: logprobs against the engine's own
// log-softmax for the same prefix (the test loads the same model), n, the
// penalties' formula (greedy, and sampled at a temperature), logit_bias,
// streaming agreeing with non-streaming (the accepted and refused
// parameters: chat-parameters-refused.test.ts);
// the cloud API's /v1/inference/chat takes the same parameters by svc's
// names; and the official Python client reads logprobs (skipped, counted,
// where python3 has no openai package).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { loadModel, type Model } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import type OpenAI from "openai";
import {
  call,
  deploymentWithKey,
  edgeClient,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  tinyModel,
} from "./harness.js";

const run = promisify(execFile);
const MESSAGES: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Tell me about the sea." }];
type Params = OpenAI.ChatCompletionCreateParamsNonStreaming;
type Entry = OpenAI.ChatCompletionTokenLogprob;

let model: Model;
let promptIds: number[];

/** The engine's log-softmax after the prefix, with `adjust` applied to the raw logits first. */
function logSoftmax(ids: number[], adjust: (row: Float64Array) => void = () => {}): Float64Array {
  const V = model.config.vocabSize;
  const row = Float64Array.from(model.logits(ids).subarray((ids.length - 1) * V));
  adjust(row);
  let max = Number.NEGATIVE_INFINITY;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const logZ = max + Math.log(sum);
  return row.map((x) => x - logZ);
}

/** A token's bytes as the logprobs give them (a special token's: its text). */
const bytesOf = (id: number) =>
  Array.from(
    model.tokenizer.tokenBytes()[id] ??
      Buffer.from(model.tokenizer.decode([id], { skipSpecialTokens: false })),
  );

/** The k-th token of the vocabulary whose text is ASCII letters. */
function wordToken(k: number): number {
  const table = model.tokenizer.tokenBytes();
  let seen = 0;
  for (let id = 0; id < table.length; id++) {
    const b = table[id];
    if (b?.every((x) => (x >= 0x61 && x <= 0x7a) || (x >= 0x41 && x <= 0x5a)) && seen++ === k) return id;
  }
  throw new Error("no such token");
}

/**
 * Follows a greedy completion's logprobs with the engine's own forward pass:
 * each token is the argmax of the (adjusted) log-softmax after the tokens
 * before it, with its logprob and the top alternatives within 1e-4.
 */
function assertGreedyLogprobs(
  content: Entry[],
  adjust: (row: Float64Array, completion: number[]) => void = () => {},
) {
  const ids = [...promptIds];
  for (const [i, entry] of content.entries()) {
    const expected = logSoftmax(ids, (row) => adjust(row, ids.slice(promptIds.length)));
    let best = 0;
    for (let id = 1; id < expected.length; id++) if (expected[id] > expected[best]) best = id;
    assert.deepEqual(entry.bytes, bytesOf(best), `token ${i} is the engine's argmax`);
    assert.ok(
      Math.abs(entry.logprob - expected[best]) < 1e-4,
      `token ${i}: ${entry.logprob} vs ${expected[best]}`,
    );
    const sorted = Array.from(expected).sort((a, b) => b - a);
    assert.ok(entry.top_logprobs.length > 0);
    for (const [k, top] of entry.top_logprobs.entries())
      assert.ok(Math.abs(top.logprob - sorted[k]) < 1e-4, `token ${i} alternative ${k}`);
    ids.push(best);
  }
}

describe("chat parameters (OpenAI's chat-completions parameters, each honoured or refused)", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let id: Identity;
  let openai: OpenAI;
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    const { deployment, key } = await deploymentWithKey(server.apiUrl, id, `params-${process.pid}`);
    openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
    model = await loadModel(await tinyModel());
    promptIds = model.tokenizer.encode(
      model.tokenizer.applyChatTemplate(MESSAGES as { role: "user"; content: string }[], {
        addGenerationPrompt: true,
      }),
    );
  });
  after(() => server?.cleanup());

  const create = (params: Partial<Params>) =>
    openai.chat.completions.create({ model: "x", messages: MESSAGES, ...params } as Params);

  it("logprobs: each token's logprob and top_logprobs are the engine's log-softmax for the same prefix (1e-4)", async () => {
    const completion = await create({ temperature: 0, max_tokens: 8, logprobs: true, top_logprobs: 5 });
    const content = completion.choices[0].logprobs?.content;
    assert.ok(content);
    assert.equal(content.length, completion.usage?.completion_tokens);
    for (const entry of content) {
      assert.equal(entry.top_logprobs.length, 5);
      assert.equal(typeof entry.token, "string");
      assert.deepEqual(entry.top_logprobs[0].logprob, entry.logprob, "greedy takes the most likely token");
    }
    assertGreedyLogprobs(content);
    const plain = await create({ temperature: 0, max_tokens: 8 });
    assert.equal(plain.choices[0].logprobs, null, "no logprobs unless asked");
    assert.equal(plain.choices[0].message.content, completion.choices[0].message.content);
  });

  it("streaming and non-streaming agree token for token at temperature 0, logprobs included", async () => {
    const params = { temperature: 0, max_tokens: 10, logprobs: true, top_logprobs: 3 } as const;
    const whole = await create(params);
    const stream = await openai.chat.completions.create({
      model: "x",
      messages: MESSAGES,
      ...params,
      stream: true,
    });
    let text = "";
    const streamed: Entry[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    }
    assert.equal(text, whole.choices[0].message.content);
    assert.deepEqual(streamed, whole.choices[0].logprobs?.content);
  });

  it("n: 3 choices sampled together; usage counts every choice's tokens; choice 0 is the n = 1 answer", async () => {
    const completion = await create({ n: 3, seed: 11, temperature: 1, max_tokens: 6, logprobs: true });
    assert.deepEqual(
      completion.choices.map((c) => c.index),
      [0, 1, 2],
    );
    const tokens = completion.choices.map((c) => c.logprobs?.content?.length ?? 0);
    assert.equal(completion.usage?.completion_tokens, tokens[0] + tokens[1] + tokens[2]);
    assert.equal(completion.usage?.prompt_tokens, promptIds.length, "the prompt counts once");
    assert.ok(
      new Set(completion.choices.map((c) => c.message.content)).size > 1,
      "different seeds, different texts",
    );
    const single = await create({ seed: 11, temperature: 1, max_tokens: 6 });
    assert.equal(single.choices[0].message.content, completion.choices[0].message.content);
    // streamed: each choice's deltas add up to the same texts
    const stream = await openai.chat.completions.create({
      model: "x",
      messages: MESSAGES,
      n: 3,
      seed: 11,
      temperature: 1,
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ["", "", ""];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? "";
      usage = chunk.usage ?? usage;
    }
    assert.deepEqual(
      texts,
      completion.choices.map((c) => c.message.content),
    );
    assert.deepEqual(usage, completion.usage);
  });

  it("logit_bias +100 forces a token, and -100 keeps the greedy choice out", async () => {
    const forced = wordToken(5);
    const completion = await create({
      temperature: 1,
      seed: 3,
      max_tokens: 5,
      logprobs: true,
      logit_bias: { [forced]: 100 },
    });
    const content = completion.choices[0].logprobs?.content ?? [];
    assert.equal(content.length, 5);
    for (const entry of content) assert.deepEqual(entry.bytes, bytesOf(forced));
    const greedy = await create({ temperature: 0, max_tokens: 1, logprobs: true });
    const first = greedy.choices[0].logprobs?.content?.[0];
    assert.ok(first);
    const greedyId = model.tokenizer
      .tokenBytes()
      .findIndex((b) => b !== null && Buffer.from(b).equals(Buffer.from(first.bytes ?? [])));
    const banned = await create({
      temperature: 0,
      max_tokens: 1,
      logprobs: true,
      logit_bias: { [greedyId]: -100 },
    });
    assert.notDeepEqual(banned.choices[0].logprobs?.content?.[0].bytes, first.bytes);
  });

  it("frequency and presence penalties change the distribution exactly as OpenAI's formula says", async () => {
    const frequency = 1.5;
    const presence = 0.5;
    const completion = await create({
      temperature: 0,
      max_tokens: 12,
      logprobs: true,
      top_logprobs: 4,
      frequency_penalty: frequency,
      presence_penalty: presence,
    });
    const content = completion.choices[0].logprobs?.content;
    assert.ok(content && content.length > 1);
    assertGreedyLogprobs(content, (row, completionIds) => {
      const counts = new Map<number, number>();
      for (const t of completionIds) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [t, c] of counts) row[t] -= c * frequency + presence;
    });
  });

  it("sampled at a temperature, each token's logprob is that of the penalised logits divided by it", async () => {
    const temperature = 0.7;
    const frequency = 1;
    const presence = 0.8;
    const completion = await create({
      temperature,
      seed: 5,
      max_tokens: 10,
      logprobs: true,
      top_logprobs: 2,
      frequency_penalty: frequency,
      presence_penalty: presence,
    });
    const content = completion.choices[0].logprobs?.content;
    assert.ok(content && content.length > 1);
    const table = model.tokenizer.tokenBytes();
    const ids = [...promptIds];
    for (const [i, entry] of content.entries()) {
      const expected = logSoftmax(ids, (row) => {
        const counts = new Map<number, number>();
        for (const t of ids.slice(promptIds.length)) counts.set(t, (counts.get(t) ?? 0) + 1);
        for (const [t, c] of counts) row[t] -= c * frequency + presence;
        for (let t = 0; t < row.length; t++) row[t] /= temperature;
      });
      const drawn = table.findIndex(
        (b) => b !== null && Buffer.from(b).equals(Buffer.from(entry.bytes ?? [])),
      );
      assert.ok(drawn >= 0, `token ${i} is in the vocabulary`);
      assert.ok(
        Math.abs(entry.logprob - expected[drawn]) < 1e-4,
        `token ${i}: ${entry.logprob} vs ${expected[drawn]}`,
      );
      const best = Array.from(expected).sort((a, b) => b - a)[0];
      assert.ok(Math.abs(entry.top_logprobs[0].logprob - best) < 1e-4, `token ${i}'s most likely`);
      ids.push(drawn);
    }
  });

  it("under response_format json_schema a biased token never breaks the JSON", async () => {
    const brace = model.tokenizer.encode("}")[0];
    for (const seed of [1, 2]) {
      const completion = await create({
        seed,
        temperature: 1,
        max_tokens: 60,
        logit_bias: { [brace]: 100, [wordToken(2)]: 50 },
        frequency_penalty: -2,
        logprobs: true,
        response_format: {
          type: "json_schema",
          json_schema: {
            name: "answer",
            schema: {
              type: "object",
              properties: { mood: { type: "string", enum: ["calm", "rough"] } },
              required: ["mood"],
              additionalProperties: false,
            },
          },
        },
      });
      const parsed = JSON.parse(completion.choices[0].message.content ?? "");
      assert.ok(["calm", "rough"].includes(parsed.mood));
    }
  });

  it("the cloud API's /v1/inference/chat takes the same parameters by svc's names", async () => {
    const chat = (json: Record<string, unknown>) =>
      call(server.apiUrl, "POST", "/v1/inference/chat", {
        token: id.token,
        json: { baseModel: TINY_MODEL, messages: MESSAGES, ...json },
      });
    const reply = await chat({ temperature: 0, maxTokens: 6, n: 2, logprobs: true, topLogprobs: 2 });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.choices.length, 2);
    const edge = await create({ temperature: 0, max_tokens: 6, logprobs: true, top_logprobs: 2 });
    // the same tokens; the values within rounding (a batch of two runs other kernel shapes than one)
    const cloud = reply.body.choices[0].logprobs.content as Entry[];
    const fromEdge = edge.choices[0].logprobs?.content ?? [];
    assert.deepEqual(
      cloud.map((e) => e.bytes),
      fromEdge.map((e) => e.bytes),
    );
    for (const [i, e] of cloud.entries()) assert.ok(Math.abs(e.logprob - fromEdge[i].logprob) < 1e-5);
    const forced = wordToken(9);
    const biased = await chat({ maxTokens: 3, logprobs: true, logitBias: { [forced]: 100 } });
    for (const entry of biased.body.choices[0].logprobs.content)
      assert.deepEqual(entry.bytes, bytesOf(forced));
    for (const [json, field] of [
      [{ top_logprobs: 2 }, "top_logprobs"],
      [{ frequencyPenalty: 9 }, "frequencyPenalty"],
      [{ topLogprobs: 1 }, "topLogprobs"],
    ] as const) {
      const refused = await chat(json);
      assert.equal(refused.status, 400);
      assert.ok(refused.body.error.message.startsWith(`"${field}"`), refused.body.error.message);
    }
  });

  it("the official Python client reads logprobs", async (t) => {
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
c = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "Tell me about the sea."}],
    temperature=0, max_tokens=5, logprobs=True, top_logprobs=2)
print(json.dumps([{"bytes": e.bytes, "logprob": e.logprob, "top": len(e.top_logprobs)} for e in c.choices[0].logprobs.content]))
`;
    const { stdout } = await run(python, ["-c", script, openai.baseURL, openai.apiKey ?? ""]);
    const fromPython = JSON.parse(stdout) as { bytes: number[]; logprob: number; top: number }[];
    const fromNode = await create({ temperature: 0, max_tokens: 5, logprobs: true, top_logprobs: 2 });
    assert.deepEqual(
      fromPython,
      fromNode.choices[0].logprobs?.content?.map((e) => ({ bytes: e.bytes, logprob: e.logprob, top: 2 })),
    );
  });
});
