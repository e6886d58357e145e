// The edge with the official openai client and with curl: addressing forms,
// streaming, auth modes, enable/disable, revocation, lastUsedAt.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { before, it } from "node:test";
import { promisify } from "node:util";
import OpenAI from "openai";
import { call, type Identity, newIdentity, type ServerProcess, TINY_MODEL, until } from "../harness.js";
import { uniqueSlug } from "./deployments.js";

const run = promisify(execFile);
const messages = [{ role: "user" as const, content: "Say something." }];

async function curl(url: string, body: unknown, headers: Record<string, string> = {}) {
  const args = [
    "-sS",
    "-o",
    "-",
    "-w",
    "\n%{http_code}",
    "-X",
    "POST",
    url,
    "-H",
    "Content-Type: application/json",
  ];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  args.push("-d", JSON.stringify(body));
  const { stdout } = await run("/usr/bin/curl", args);
  const at = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

export function edgeTests(server: () => ServerProcess) {
  let id: Identity;
  let deployment: { id: string; slug: string; url: string };
  let key: string;
  let keyId: string;
  const client = (
    apiKey: string,
    baseURL = `${server().edgeUrl}/d/${deployment.slug}/v1`,
    defaultHeaders?: Record<string, string>,
  ) => new OpenAI({ apiKey, baseURL, defaultHeaders, maxRetries: 0 });
  const patch = (json: unknown) =>
    call(server().apiUrl, "PATCH", `/v1/endpoints/${deployment.id}`, { token: id.token, json });

  before(async () => {
    id = await newIdentity(server().apiUrl);
    const created = await call(server().apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug: uniqueSlug("edge"), target: { kind: "base_model", baseModel: TINY_MODEL } },
    });
    deployment = created.body.deployment;
    const issued = await call(server().apiUrl, "POST", `/v1/endpoints/${deployment.id}/keys`, {
      token: id.token,
      json: { label: "tests" },
    });
    key = issued.body.key.plaintext;
    keyId = issued.body.key.id;
  });

  it("answers the openai client (baseURL …/d/<slug>/v1) with a 200 chat.completion with content", async () => {
    const completion = await client(key).chat.completions.create({
      model: "ignored",
      messages,
      max_tokens: 6,
      // Seeded: six unseeded byte tokens of the random model may decode to no text at all.
      seed: 7,
    });
    assert.equal(completion.object, "chat.completion");
    assert.ok(completion.choices[0].message.content && completion.choices[0].message.content.length > 0);
    assert.equal(completion.usage?.completion_tokens, 6);
  });

  it("streams to the openai client", async () => {
    const stream = await client(key).chat.completions.create({
      model: "x",
      messages,
      max_tokens: 6,
      // Seeded as above: unseeded byte tokens of the random model may decode to no text at all.
      seed: 7,
      stream: true,
    });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.ok(text.length > 0);
    assert.equal(finish, "length");
  });

  it("routes by the X-Svc-Deployment header and by Host <slug>.<domain> (curl on the deployment URL)", async () => {
    const viaHeader = await client(key, `${server().edgeUrl}/v1`, {
      "X-Svc-Deployment": deployment.slug,
    }).chat.completions.create({
      model: "x",
      messages,
      max_tokens: 2,
    });
    assert.equal(viaHeader.object, "chat.completion");
    assert.match(deployment.url, /^http:\/\/[a-z0-9-]+\.localhost:\d+\/v1\/chat\/completions$/);
    const viaHost = await curl(
      deployment.url,
      { model: "x", messages, max_tokens: 2 },
      { Authorization: `Bearer ${key}` },
    );
    assert.equal(viaHost.status, 200, viaHost.body);
    assert.equal(JSON.parse(viaHost.body).object, "chat.completion");
    const streamed = await curl(
      deployment.url,
      { messages, max_tokens: 2, stream: true },
      { Authorization: `Bearer ${key}` },
    );
    assert.equal(streamed.status, 200);
    assert.match(streamed.body, /data: \[DONE\]\s*$/);
  });

  it("gives 404 when the client is handed the full per-operation URL", async () => {
    await assert.rejects(
      client(key, `${server().edgeUrl}/d/${deployment.slug}/v1/chat/completions`).chat.completions.create({
        model: "x",
        messages,
      }),
      (error: unknown) => error instanceof OpenAI.NotFoundError,
    );
    const viaCurl = await curl(
      `${deployment.url}/chat/completions`,
      { messages },
      { Authorization: `Bearer ${key}` },
    );
    assert.equal(viaCurl.status, 404);
  });

  it("refuses a wrong or missing key with 401 in the OpenAI error shape", async () => {
    await assert.rejects(
      client("svc_live_wrong").chat.completions.create({ model: "x", messages }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.AuthenticationError);
        assert.equal(error.status, 401);
        assert.equal(error.code, "invalid_api_key");
        return true;
      },
    );
    const bare = await curl(deployment.url, { messages });
    assert.equal(bare.status, 401);
    const body = JSON.parse(bare.body);
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  });

  it("404s a disabled deployment and serves it again once enabled", async () => {
    assert.equal((await patch({ enabled: false })).status, 200);
    await assert.rejects(
      client(key).chat.completions.create({ model: "x", messages }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    const viaCurl = await curl(deployment.url, { messages }, { Authorization: `Bearer ${key}` });
    assert.equal(viaCurl.status, 404);
    assert.equal(JSON.parse(viaCurl.body).error.type, "invalid_request_error");
    assert.equal((await patch({ enabled: true })).status, 200);
    const back = await client(key).chat.completions.create({ model: "x", messages, max_tokens: 1 });
    assert.equal(back.object, "chat.completion");
  });

  it("serves authMode none with a placeholder key, and enforces keys again when switched back", async () => {
    assert.equal((await patch({ authMode: "none" })).status, 200);
    const open = await client("not-needed").chat.completions.create({ model: "x", messages, max_tokens: 1 });
    assert.equal(open.object, "chat.completion");
    const noHeader = await curl(deployment.url, { messages, max_tokens: 1 });
    assert.equal(noHeader.status, 200);
    assert.equal((await patch({ authMode: "fixed_api_key" })).status, 200);
    await assert.rejects(
      client("not-needed").chat.completions.create({ model: "x", messages }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
    const keyed = await client(key).chat.completions.create({ model: "x", messages, max_tokens: 1 });
    assert.equal(keyed.object, "chat.completion");
  });

  it("records lastUsedAt off the request path, and a revoked key gets 401 on the next request", async () => {
    const used = await until("lastUsedAt", async () => {
      const keys = await call(server().apiUrl, "GET", `/v1/endpoints/${deployment.id}/keys`, {
        token: id.token,
      });
      return keys.body.keys[0].lastUsedAt as string | null;
    });
    assert.ok(Date.parse(used) > 0);
    assert.equal(
      (
        await call(server().apiUrl, "DELETE", `/v1/endpoints/${deployment.id}/keys/${keyId}`, {
          token: id.token,
        })
      ).status,
      200,
    );
    await assert.rejects(
      client(key).chat.completions.create({ model: "x", messages }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
  });

  it("404s unknown slugs and requests that name no deployment, and rejects bad bodies in the OpenAI shape", async () => {
    await assert.rejects(
      client("k", `${server().edgeUrl}/d/no-such-deployment/v1`).chat.completions.create({
        model: "x",
        messages,
      }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    const nothing = await curl(`${server().edgeUrl}/v1/chat/completions`, { messages });
    assert.equal(nothing.status, 404);
    assert.equal((await patch({ authMode: "none" })).status, 200);
    const bad = await curl(`${server().edgeUrl}/d/${deployment.slug}/v1/chat/completions`, {
      messages: "hi",
    });
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).error.message, /"messages" must be an array/);
    assert.equal((await patch({ authMode: "fixed_api_key" })).status, 200);
  });
}
