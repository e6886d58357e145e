// Usage per deployment key, on both databases: requests served at the edge
// (after authentication and the rate limit, failed ones included) and the
// tokens the answers reported, per key and UTC day, read through
// GET /v1/endpoints/:id/keys (30-day totals) and …/keys/:keyId/usage?days=N.
// Counts are written off the request path about once a second, so the reads
// poll until they match; a restart shows they are flushed on close.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import OpenAI from "openai";
import pg from "pg";
import {
  type Backend,
  call,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  startServerProcess,
  TINY_MODEL,
  until,
} from "./harness.js";
import { uniqueSlug } from "./suites/deployments.js";

interface Totals {
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

const messages = [{ role: "user" as const, content: "Count my tokens, please." }];
const KEY_LIMIT = 12;

/** An OpenAI-compatible upstream that reports fixed usage: 7+3 tokens, or 5+2 when a stream asks for usage. */
async function countingUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    const base = { id: "chatcmpl-up", created: 0, model: body.model };
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          ...base,
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (choices: unknown[], usage?: unknown) =>
      res.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, usage })}\n\n`);
    chunk([{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }]);
    chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
    if (body.stream_options?.include_usage === true)
      chunk([], { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

const add = (t: Totals, promptTokens: number, completionTokens: number): Totals => ({
  requests: t.requests + 1,
  promptTokens: t.promptTokens + promptTokens,
  completionTokens: t.completionTokens + completionTokens,
});
const ZERO: Totals = { requests: 0, promptTokens: 0, completionTokens: 0 };
const totalsOf = (u: Totals): Totals => ({
  requests: u.requests,
  promptTokens: u.promptTokens,
  completionTokens: u.completionTokens,
});
const utcToday = () => new Date().toISOString().slice(0, 10);

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`usage per deployment key (${backend})`, () => {
    let server: Awaited<ReturnType<typeof serverFor>>;
    let upstream: Awaited<ReturnType<typeof countingUpstream>>;
    let id: Identity;
    const args = () => ["--rate-limit-key", `${KEY_LIMIT}/min`, "--upstream", `counting=${upstream.url}`];

    const api = (method: string, path: string, json?: unknown, apiUrl = server.apiUrl) =>
      call(apiUrl, method, path, { token: id.token, json });
    const deploy = async (upstreamName?: string) =>
      (
        await api("POST", `/v1/endpoints?${id.scope}`, {
          slug: uniqueSlug("usage"),
          target: { kind: "base_model", baseModel: TINY_MODEL },
          ...(upstreamName ? { upstream: { name: upstreamName, model: "up-model" } } : {}),
        })
      ).body.deployment as { id: string; slug: string };
    const issue = async (deploymentId: string, label: string) =>
      (await api("POST", `/v1/endpoints/${deploymentId}/keys`, { label })).body.key as {
        id: string;
        plaintext: string;
      };
    const client = (slug: string, key: string, edgeUrl = server.edgeUrl) =>
      new OpenAI({ apiKey: key, baseURL: `${edgeUrl}/d/${slug}/v1`, maxRetries: 0 });
    /** The 30-day summaries of the deployment's keys, once they equal `expected` (key id → totals). */
    const summariesEqual = async (
      deploymentId: string,
      expected: Record<string, Totals>,
      apiUrl?: string,
    ) => {
      let seen: unknown;
      try {
        return await until("usage flushed", async () => {
          const listed = await api("GET", `/v1/endpoints/${deploymentId}/keys`, undefined, apiUrl);
          seen = Object.fromEntries(
            (listed.body.keys as { id: string; usage: Totals & { days: number } }[]).map((k) => [
              k.id,
              k.usage,
            ]),
          );
          const want = Object.fromEntries(Object.entries(expected).map(([k, t]) => [k, { days: 30, ...t }]));
          try {
            assert.deepEqual(seen, want);
            return true;
          } catch {
            return false;
          }
        });
      } catch (error) {
        throw new Error(`${(error as Error).message}: last seen ${JSON.stringify(seen)}`);
      }
    };

    before(async () => {
      upstream = await countingUpstream();
      server = await serverFor(backend, args());
      id = await newIdentity(server.apiUrl);
    });
    after(async () => {
      await server?.cleanup();
      upstream?.server.close();
    });

    it("counts each key's requests and the tokens the OpenAI answers reported, streamed or not, failed or not", async () => {
      const d = await deploy();
      const a = await issue(d.id, "a");
      const b = await issue(d.id, "b");
      let expectA = ZERO;
      let expectB = ZERO;
      for (const maxTokens of [2, 4]) {
        const r = await client(d.slug, a.plaintext).chat.completions.create({
          model: "x",
          messages,
          max_tokens: maxTokens,
        });
        assert.ok(r.usage);
        expectA = add(expectA, r.usage.prompt_tokens, r.usage.completion_tokens);
      }
      const streamed = async (key: string, maxTokens: number) => {
        const stream = await client(d.slug, key).chat.completions.create({
          model: "x",
          messages: [{ role: "user", content: `stream ${maxTokens}` }],
          max_tokens: maxTokens,
          stream: true,
          // As OpenAI: a stream reports usage only when asked, in a last chunk of its own.
          stream_options: { include_usage: true },
        });
        let usage: OpenAI.CompletionUsage | null | undefined;
        for await (const chunk of stream) usage = chunk.usage ?? usage;
        assert.ok(usage, "the last chunk reports usage");
        return usage;
      };
      const sa = await streamed(a.plaintext, 3);
      expectA = add(expectA, sa.prompt_tokens, sa.completion_tokens);
      const sb = await streamed(b.plaintext, 5);
      expectB = add(expectB, sb.prompt_tokens, sb.completion_tokens);
      // Served, then refused by validation: a request with no tokens.
      await assert.rejects(
        client(d.slug, b.plaintext).chat.completions.create({ model: "x", messages, temperature: 5 }),
        (e: unknown) => e instanceof OpenAI.BadRequestError,
      );
      expectB = add(expectB, 0, 0);
      // A wrong key is no key's request.
      await assert.rejects(
        client(d.slug, "svc_live_wrong").chat.completions.create({ model: "x", messages }),
        (e: unknown) => e instanceof OpenAI.AuthenticationError,
      );
      assert.ok(expectA.promptTokens > 0 && expectA.completionTokens > 0);
      await summariesEqual(d.id, { [a.id]: expectA, [b.id]: expectB });

      const before = utcToday();
      const daily = await api("GET", `/v1/endpoints/${d.id}/keys/${a.id}/usage?days=3`);
      const afterDay = utcToday();
      assert.equal(daily.status, 200);
      const usage = daily.body.usage;
      assert.equal(usage.keyId, a.id);
      assert.ok([before, afterDay].includes(usage.to), `to ${usage.to} is today (UTC)`);
      assert.deepEqual(
        usage.daily.map((r: { day: string }) => r.day),
        [2, 1, 0].map((n) => new Date(Date.parse(usage.to) - n * 86_400_000).toISOString().slice(0, 10)),
        "three days, oldest first",
      );
      assert.equal(usage.from, usage.daily[0].day);
      assert.deepEqual(usage.totals, expectA);
      assert.deepEqual(usage.daily.at(-1), { day: usage.to, ...expectA });
      assert.deepEqual(usage.daily.slice(0, 2).map(totalsOf), [ZERO, ZERO]);
      const byDefault = await api("GET", `/v1/endpoints/${d.id}/keys/${b.id}/usage`);
      assert.equal(byDefault.body.usage.daily.length, 30);
      assert.deepEqual(byDefault.body.usage.totals, expectB);
      // Revoking keeps the key's usage readable.
      const revoked = await api("DELETE", `/v1/endpoints/${d.id}/keys/${b.id}`);
      assert.deepEqual(revoked.body.key.usage, { days: 30, ...expectB });
    });

    it("does not count a request the rate limit refused", async () => {
      const d = await deploy();
      const k = await issue(d.id, "limited");
      let served = 0;
      let refused = false;
      for (let i = 0; i < KEY_LIMIT + 8 && !refused; i++) {
        // Bad bodies: answered at once, so the budget barely refills meanwhile.
        const r = await call(server.edgeUrl, "POST", `/d/${d.slug}/v1/chat/completions`, {
          token: k.plaintext,
          json: { messages: "not a list" },
        });
        if (r.status === 429) refused = true;
        else {
          assert.equal(r.status, 400);
          served++;
        }
      }
      assert.ok(refused, "the limit was reached");
      await summariesEqual(d.id, { [k.id]: { requests: served, promptTokens: 0, completionTokens: 0 } });
    });

    it("counts what an upstream reports for forwarded deployments, and 0 tokens when it reports nothing", async () => {
      const d = await deploy("counting");
      const k = await issue(d.id, "forwarded");
      const openai = client(d.slug, k.plaintext);
      const plain = await openai.chat.completions.create({ model: "x", messages });
      assert.deepEqual(plain.usage, { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
      for (const includeUsage of [true, false]) {
        const stream = await openai.chat.completions.create({
          model: "x",
          messages,
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        });
        for await (const _ of stream);
      }
      await summariesEqual(d.id, { [k.id]: { requests: 3, promptTokens: 12, completionTokens: 5 } });
    });

    it("answers 400 naming days when out of range, and 404 for another org's deployment or a key not of it", async () => {
      const d = await deploy();
      const k = await issue(d.id, "k");
      const other = await deploy();
      const otherKey = await issue(other.id, "other");
      for (const days of ["0", "367", "1.5", "1e2", "ten", "", "-3"]) {
        const r = await api("GET", `/v1/endpoints/${d.id}/keys/${k.id}/usage?days=${days}`);
        assert.equal(r.status, 400, `days=${days}`);
        assert.equal(r.body.error.code, "invalid_request");
        assert.match(r.body.error.message, /"days" \(query parameter\) must be an integer from 1 to 366/);
      }
      for (const days of ["1", "366"]) {
        const r = await api("GET", `/v1/endpoints/${d.id}/keys/${k.id}/usage?days=${days}`);
        assert.equal(r.body.usage.daily.length, Number(days));
      }
      const stranger = await newIdentity(server.apiUrl);
      const foreign = await call(server.apiUrl, "GET", `/v1/endpoints/${d.id}/keys/${k.id}/usage`, {
        token: stranger.token,
      });
      assert.equal(foreign.status, 404);
      const listedByStranger = await call(server.apiUrl, "GET", `/v1/endpoints/${d.id}/keys`, {
        token: stranger.token,
      });
      assert.equal(listedByStranger.status, 404);
      const mismatched = await api("GET", `/v1/endpoints/${d.id}/keys/${otherKey.id}/usage`);
      assert.equal(mismatched.status, 404);
      assert.equal(mismatched.body.error.code, "not_found");
      assert.equal((await api("GET", `/v1/endpoints/${d.id}/keys/nope/usage`)).status, 404);
    });

    it("writes counts still in memory on shutdown, and deletes them with the deployment", async () => {
      const d = await deploy();
      const k = await issue(d.id, "restart");
      const r = await client(d.slug, k.plaintext).chat.completions.create({
        model: "x",
        messages,
        max_tokens: 2,
      });
      assert.ok(r.usage);
      // Stopped at once: whatever the once-a-second flush has not written yet is written by close().
      assert.equal(await server.stop(), 0);
      const again: ServerProcess = await startServerProcess({
        dataDir: server.dataDir,
        databaseUrl: server.databaseUrl,
        args: args(),
      });
      try {
        const listed = await api("GET", `/v1/endpoints/${d.id}/keys`, undefined, again.apiUrl);
        assert.deepEqual(listed.body.keys[0].usage, {
          days: 30,
          requests: 1,
          promptTokens: r.usage.prompt_tokens,
          completionTokens: r.usage.completion_tokens,
        });
        assert.equal(await usageRows(server, k.id), 1);
        assert.equal((await api("DELETE", `/v1/endpoints/${d.id}`, undefined, again.apiUrl)).status, 204);
        assert.equal(await usageRows(server, k.id), 0, "the key's usage went with the deployment");
      } finally {
        await again.stop();
      }
    });
  });
}

/** The stored usage rows of a key, read from the database itself. */
async function usageRows(
  server: { dataDir: string; databaseUrl: string | null },
  keyId: string,
): Promise<number> {
  const query = "select count(*) as n from deployment_key_usage where key_id = $1";
  if (server.databaseUrl) {
    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    try {
      return Number((await client.query(query, [keyId])).rows[0].n);
    } finally {
      await client.end();
    }
  }
  const db = new BetterSqlite3(join(server.dataDir, "svc.db"), { readonly: true });
  try {
    return Number((db.prepare(query.replace("$1", "?")).get(keyId) as { n: number }).n);
  } finally {
    db.close();
  }
}
