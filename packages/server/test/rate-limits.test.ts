// Request rate limits, set by the operator: the edge per deployment key (open
// deployments per client address), the cloud API per identity, anonymous
// sign-ups per client address. Over the limit: 429 with Retry-After, in the
// OpenAI error shape at the edge and the cloud API's shape elsewhere; chat
// completions and the Responses API share a key's budget; other
// keys and identities are not held up.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import {
  type Backend,
  call,
  edgeClient,
  newIdentity,
  type Reply,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
} from "./harness.js";

const LIMITS = [
  "--rate-limit-key",
  "3/min",
  "--rate-limit-identity",
  "12/min",
  "--rate-limit-signup",
  "4/min",
];

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`rate limits (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    // The harness turns the sign-up limit off; the flags given here come after and win.
    before(async () => {
      server = await serverFor(backend, LIMITS);
    });
    after(() => server?.cleanup());

    it("limits edge requests per key: the official client gets 429 with Retry-After; another key is not held up", async () => {
      const id = await newIdentity(server.apiUrl);
      const deployment = (
        await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
          token: id.token,
          json: {
            slug: `limited-${backend}-${process.pid}`,
            target: { kind: "base_model", baseModel: TINY_MODEL },
          },
        })
      ).body.deployment;
      const newKey = async () =>
        (
          await call(server.apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
            token: id.token,
            json: { label: "k" },
          })
        ).body.key.plaintext as string;
      const client = (key: string) => edgeClient(server.edgeUrl, deployment.slug, key);
      const chat = (openai: OpenAI) =>
        openai.chat.completions.create({
          model: "x",
          messages: [{ role: "user", content: "hi" }],
          max_tokens: 1,
        });
      const respond = (openai: OpenAI) =>
        openai.responses.create({ model: "x", input: "hi", max_output_tokens: 1 });
      const first = client(await newKey());
      // Chat completions and the Responses API share the key's budget.
      assert.equal((await chat(first)).object, "chat.completion");
      assert.equal((await respond(first)).object, "response");
      assert.equal((await chat(first)).object, "chat.completion");
      const refused = await respond(first).catch((error) => error as InstanceType<typeof OpenAI.APIError>);
      assert.ok(refused instanceof OpenAI.RateLimitError, String(refused));
      assert.equal(refused.status, 429);
      assert.equal(refused.code, "rate_limit_exceeded");
      assert.equal((refused.error as { type?: string }).type, "requests");
      const retryAfter = Number(refused.headers?.get("retry-after"));
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 20,
        `Retry-After ${retryAfter}`,
      );
      assert.equal(
        (await chat(client(await newKey()))).object,
        "chat.completion",
        "another key has its own budget",
      );
    });

    it("limits cloud API requests per identity; another identity is not held up", async () => {
      const a = await newIdentity(server.apiUrl);
      const b = await newIdentity(server.apiUrl);
      const statuses: number[] = [];
      for (let i = 0; i < 14; i++)
        statuses.push((await call(server.apiUrl, "GET", "/v1/me", { token: a.token })).status);
      // newIdentity spent one request of the identity's budget (creating its project).
      assert.deepEqual(statuses.slice(0, 11), Array(11).fill(200));
      // Past the budget: refused (a slow machine may earn back one request per 5 s meanwhile).
      assert.ok(statuses.slice(11).includes(429), statuses.join(","));
      let refused = await call(server.apiUrl, "GET", "/v1/me", { token: a.token });
      for (let i = 0; i < 3 && refused.status !== 429; i++)
        refused = await call(server.apiUrl, "GET", "/v1/me", { token: a.token });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, "rate_limit_exceeded");
      assert.match(refused.body.error.message, /too many requests for this identity \(limit 12\/min\)/);
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      // The cloud API's Responses route counts against the same budget.
      const respond = () =>
        call(server.apiUrl, "POST", "/v1/responses", {
          token: a.token,
          json: { model: TINY_MODEL, input: "hi", max_output_tokens: 1 },
        });
      let responses = await respond();
      for (let i = 0; i < 3 && responses.status !== 429; i++) responses = await respond();
      assert.equal(responses.status, 429);
      assert.equal((await call(server.apiUrl, "GET", "/v1/me", { token: b.token })).status, 200);
    });

    it("limits anonymous sign-ups per client address", async () => {
      // The identities above used this address's budget already: ask until refused, then check the answer.
      let refused: Reply | null = null;
      for (let i = 0; i < 6 && !refused; i++) {
        const r = await call(server.apiUrl, "POST", "/v1/auth/anonymous");
        if (r.status !== 201) refused = r;
      }
      assert.ok(refused, "a sign-up past the limit is refused");
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, "rate_limit_exceeded");
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    });
  });
}
