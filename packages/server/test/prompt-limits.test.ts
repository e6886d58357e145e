// Prompts too long for the model's context get 400 context_length_exceeded
// (OpenAI's code), at the edge and on the cloud API, streamed or not: a prompt
// certainly too long by its bytes is refused before anything is tokenized, a
// longer one in tokens after tokenization in the inference process, and an
// explicit max_tokens past the context is refused at the edge as OpenAI does
// (the cloud API clamps it, as documented). Tokenization runs off the
// server's event loop: /healthz answers while 1 MB prompts are in flight.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import {
  type Backend,
  call,
  deploymentWithKey,
  edgeClient,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
} from "./harness.js";

/** 950,000 characters of text in five messages (each under the 200,000-character limit of one message). */
const nearlyOneMegabyte = (letter: string): OpenAI.ChatCompletionMessageParam[] =>
  Array.from({ length: 5 }, () => ({ role: "user", content: letter.repeat(190_000) }));

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`prompt limits (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let openai: OpenAI;
    let contextLength: number;
    before(async () => {
      server = await serverFor(backend);
      id = await newIdentity(server.apiUrl);
      const { deployment, key } = await deploymentWithKey(
        server.apiUrl,
        id,
        `limits-${backend}-${process.pid}`,
      );
      openai = edgeClient(server.edgeUrl, deployment.slug, key.plaintext);
      const models = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
      contextLength = models.body.models.find((m: { name: string }) => m.name === TINY_MODEL).contextLength;
    });
    after(() => server?.cleanup());

    /** The OpenAI error the edge answered, as the official client reports it. */
    async function edgeError(request: Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "model">) {
      try {
        await openai.chat.completions.create({ model: "x", ...request });
      } catch (error) {
        return error as InstanceType<typeof OpenAI.APIError>;
      }
      assert.fail("the edge answered 200");
    }

    it("refuses a prompt longer than the context in bytes before tokenizing it, and one longer in tokens after", async () => {
      // The tiny model's tokens are single bytes (and 13-byte special tokens): 950 kB cannot fit 2048 tokens.
      const huge = await edgeError({ messages: nearlyOneMegabyte("x") });
      assert.equal(huge.status, 400);
      assert.equal(huge.code, "context_length_exceeded");
      assert.match(huge.message, /holds at most \d+ bytes/);

      const long = await edgeError({ messages: [{ role: "user", content: "y".repeat(contextLength + 10) }] });
      assert.equal(long.status, 400);
      assert.equal(long.code, "context_length_exceeded");
      assert.match(long.message, new RegExp(`the context holds ${contextLength}`));
    });

    it("refuses a streamed request that does not fit with 400 too, not an error chunk after a 200", async () => {
      const response = await fetch(`${openai.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${openai.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "x",
          stream: true,
          messages: [{ role: "user", content: "z".repeat(contextLength + 10) }],
        }),
      });
      assert.equal(response.status, 400);
      const body = (await response.json()) as { error: { code: string; type: string } };
      assert.equal(body.error.code, "context_length_exceeded");
      assert.equal(body.error.type, "invalid_request_error");
    });

    it("refuses an explicit max_tokens past the context at the edge; without one, the completion fills what is left", async () => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "hi" }];
      const refused = await edgeError({ messages, max_tokens: contextLength });
      assert.equal(refused.status, 400);
      assert.equal(refused.code, "context_length_exceeded");
      assert.match(refused.message, /in the messages, \d+ in the completion/);
      const fits = await openai.chat.completions.create({ model: "x", messages, max_tokens: 3 });
      assert.equal(fits.usage?.completion_tokens, 3);

      // The cloud API clamps maxTokens to the room left (documented), as the Playground expects.
      const clamped = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
        token: id.token,
        json: {
          baseModel: TINY_MODEL,
          messages: [{ role: "user", content: "q".repeat(contextLength - 40) }],
          maxTokens: 4096,
          temperature: 0,
        },
      });
      assert.equal(clamped.status, 200, JSON.stringify(clamped.body));
      assert.ok(clamped.body.usage.prompt_tokens + clamped.body.usage.completion_tokens <= contextLength);
    });

    it("answers chat messages holding NUL: a byte-level model may write one, and its answer comes back as history", async () => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: "user", content: "hi" },
        { role: "assistant", content: "a\u0000b" },
        { role: "user", content: "again\u0000" },
      ];
      const edge = await openai.chat.completions.create({ model: "x", messages, max_tokens: 2 });
      assert.equal(edge.usage?.completion_tokens, 2);
      const api = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
        token: id.token,
        json: { baseModel: TINY_MODEL, messages, maxTokens: 2 },
      });
      assert.equal(api.status, 200, JSON.stringify(api.body));
    });

    it("answers /healthz within 200 ms while four 1 MB prompts are in flight", async () => {
      const prompts = Array.from({ length: 4 }, () =>
        fetch(`${server.apiUrl}/v1/inference/chat?${id.scope}`, {
          method: "POST",
          headers: { authorization: `Bearer ${id.token}`, "content-type": "application/json" },
          body: JSON.stringify({ baseModel: TINY_MODEL, messages: nearlyOneMegabyte("w") }),
        }),
      );
      const started = performance.now();
      const health = await call(server.apiUrl, "GET", "/healthz");
      const ms = performance.now() - started;
      assert.equal(health.status, 200);
      assert.ok(ms < 200, `/healthz took ${ms.toFixed(0)} ms`);
      for (const response of await Promise.all(prompts)) {
        assert.equal(response.status, 400);
        assert.equal(
          ((await response.json()) as { error: { code: string } }).error.code,
          "context_length_exceeded",
        );
      }
    });
  });
}
