// POST /v1/inference/chat on the base model, a final adapter and a checkpoint.
import assert from "node:assert/strict";
import { before, it } from "node:test";
import {
  call,
  type Identity,
  identityWithFinishedJob,
  newIdentity,
  readSse,
  type ServerProcess,
  TINY_MODEL,
} from "../harness.js";

const messages = [{ role: "user", content: "What is 3 plus one?" }];

export function inferenceTests(server: () => ServerProcess) {
  let id: Identity;
  let jobId: string;
  before(async () => {
    ({ id, jobId } = await identityWithFinishedJob(server().apiUrl));
  });
  const chat = (json: unknown, token = id.token) =>
    call(server().apiUrl, "POST", "/v1/inference/chat", { token, json });

  it("answers a chat.completion from the base model with usage counts", async () => {
    const reply = await chat({ messages, baseModel: TINY_MODEL, maxTokens: 5, temperature: 0 });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.object, "chat.completion");
    assert.equal(reply.body.choices[0].message.role, "assistant");
    assert.equal(typeof reply.body.choices[0].message.content, "string");
    assert.equal(reply.body.usage.completion_tokens, 5);
    assert.equal(reply.body.choices[0].finish_reason, "length");
    assert.equal(reply.body.usage.total_tokens, reply.body.usage.prompt_tokens + 5);
  });

  it("honours seed (same seed, same text) with sampling on", async () => {
    const ask = () =>
      chat({ messages, baseModel: TINY_MODEL, maxTokens: 8, temperature: 1, topP: 0.9, seed: 7 });
    const [a, b] = [await ask(), await ask()];
    assert.equal(a.body.choices[0].message.content, b.body.choices[0].message.content);
  });

  it("honours stop strings and topP", async () => {
    const greedy = await chat({ messages, baseModel: TINY_MODEL, maxTokens: 6, temperature: 0 });
    const text: string = greedy.body.choices[0].message.content;
    assert.ok(text.length >= 2, JSON.stringify(text));
    const stop = text.slice(1, 2);
    const stopped = await chat({ messages, baseModel: TINY_MODEL, maxTokens: 6, temperature: 0, stop });
    assert.equal(stopped.body.choices[0].finish_reason, "stop");
    assert.equal(stopped.body.choices[0].message.content, text.slice(0, text.indexOf(stop)));
    // A nucleus this small keeps only the most likely token: sampling turns greedy.
    const nucleus = await chat({
      messages,
      baseModel: TINY_MODEL,
      maxTokens: 6,
      temperature: 1,
      topP: 1e-6,
      seed: 3,
    });
    assert.equal(nucleus.body.choices[0].message.content, text);
  });

  it("streams chat.completion.chunk lines ending in [DONE], with usage on the last chunk", async () => {
    const response = await fetch(`${server().apiUrl}/v1/inference/chat`, {
      method: "POST",
      headers: { authorization: `Bearer ${id.token}`, "content-type": "application/json" },
      body: JSON.stringify({
        messages,
        adapter: { kind: "final", jobId },
        maxTokens: 4,
        stream: true,
        temperature: 0,
      }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
    const read = await readSse(response);
    assert.equal(read.frames.at(-1)?.data, "[DONE]");
    const chunks = read.frames.slice(0, -1).map((f) => JSON.parse(f.data));
    assert.ok(chunks.every((c) => c.object === "chat.completion.chunk"));
    const last = chunks.at(-1);
    assert.ok(["stop", "length"].includes(last.choices[0].finish_reason));
    assert.ok(last.usage.completion_tokens >= 1 && last.usage.completion_tokens <= 4);
    assert.ok(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null));
  });

  it("chats with a checkpoint, and names the field when the checkpoint or job does not exist", async () => {
    const ok = await chat({ messages, adapter: { kind: "checkpoint", jobId, step: 1 }, maxTokens: 2 });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const noStep = await chat({ messages, adapter: { kind: "checkpoint", jobId, step: 99 } });
    assert.equal(noStep.status, 400);
    assert.match(noStep.body.error.message, /"adapter.step": job .* has no checkpoint at step 99/);
    const other = await newIdentity(server().apiUrl);
    const foreign = await chat({ messages, adapter: { kind: "final", jobId } }, other.token);
    assert.equal(foreign.status, 404);
  });

  it("rejects bad chat requests naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ messages: [] }, /"messages" must not be empty/],
      [{ messages: [{ role: "user" }] }, /"messages\[0\].content" is required/],
      [{ messages, temperature: -1 }, /"temperature" must be at least 0/],
      [{ messages, topP: 0 }, /"topP" must be greater than 0/],
      [{ messages, maxTokens: 0 }, /"maxTokens" must be a positive integer/],
      [{ messages, stop: [1] }, /"stop\[0\]" must be a string/],
      [
        { messages, adapter: { kind: "latest", jobId } },
        /"adapter.kind" must be one of "final", "checkpoint"/,
      ],
      [{ messages, baseModel: "x/y" }, /"baseModel": base model "x\/y" is not served here/],
      [{ messages, stream: "yes" }, /"stream" must be true or false/],
      [{ messages, n: 17 }, /"n" must be at most 16/],
      [{ messages, top_p: 0.5 }, /"top_p" is not a known field/],
    ];
    for (const [json, message] of cases) {
      const reply = await chat(json);
      assert.equal(reply.status, 400, JSON.stringify(json));
      assert.match(reply.body.error.message, message);
    }
  });
}
