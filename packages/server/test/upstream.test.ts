// Deployments forwarded to an external OpenAI-compatible server. The upstream
// is a second real `svc server` (its edge speaks the OpenAI API) and, to see
// exactly what is sent, a loopback HTTP server that records each request. The
// edge in front keeps auth, the enabled switch and key accounting, on chat
// completions and on the Responses API alike.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
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

const messages = [{ role: "user" as const, content: "Say something." }];

interface Recorded {
  authorization: string | undefined;
  body: Record<string, unknown>;
}

/** Answers every POST with one fixed chat.completion and remembers what it was sent. */
async function recordingUpstream(): Promise<{ server: Server; url: string; requests: Recorded[] }> {
  const requests: Recorded[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    requests.push({ authorization: req.headers.authorization, body: JSON.parse(text) });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "chatcmpl-recorded",
        object: "chat.completion",
        created: 0,
        model: "recorded-model",
        choices: [{ index: 0, message: { role: "assistant", content: "recorded" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/v1`, requests };
}

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`deployments forwarded to an upstream (${backend})`, () => {
    let upstream: ServerProcess;
    let upstreamSlug: string;
    let upstreamKey: string;
    let recorder: Awaited<ReturnType<typeof recordingUpstream>>;
    let server: Awaited<ReturnType<typeof serverFor>>;
    let id: Identity;
    let deployment: { id: string; slug: string };
    let key: string;

    const api = (method: string, path: string, json?: unknown) =>
      call(server.apiUrl, method, path, { token: id.token, json });
    const patch = (json: unknown) => api("PATCH", `/v1/endpoints/${deployment.id}`, json);
    const client = (apiKey: string) =>
      new OpenAI({ apiKey, baseURL: `${server.edgeUrl}/d/${deployment.slug}/v1`, maxRetries: 0 });

    before(async () => {
      upstream = await startServerProcess();
      const owner = await newIdentity(upstream.apiUrl);
      upstreamSlug = uniqueSlug("upstream");
      const created = await call(upstream.apiUrl, "POST", `/v1/endpoints?${owner.scope}`, {
        token: owner.token,
        json: { slug: upstreamSlug, target: { kind: "base_model", baseModel: TINY_MODEL } },
      });
      const issued = await call(upstream.apiUrl, "POST", `/v1/endpoints/${created.body.deployment.id}/keys`, {
        token: owner.token,
        json: { label: "front edge" },
      });
      upstreamKey = issued.body.key.plaintext;
      recorder = await recordingUpstream();
      const upstreamUrl = `${upstream.edgeUrl}/d/${upstreamSlug}/v1`;
      server = await serverFor(
        backend,
        [
          "--upstream",
          `svc-edge=${upstreamUrl}`,
          "--upstream",
          `no-key=${upstreamUrl}`,
          "--upstream",
          `recorder=${recorder.url}`,
          "--upstream",
          "down=http://127.0.0.1:9/v1",
        ],
        { ...process.env, SVC_UPSTREAM_KEY_SVC_EDGE: upstreamKey, SVC_UPSTREAM_KEY_RECORDER: "operator-key" },
      );
      id = await newIdentity(server.apiUrl);
    });

    after(async () => {
      await server?.cleanup();
      await upstream?.stop();
      recorder?.server.close();
    });

    it("lists the declared upstreams by name only", async () => {
      const listed = await api("GET", "/v1/upstreams");
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body, {
        upstreams: [{ name: "down" }, { name: "no-key" }, { name: "recorder" }, { name: "svc-edge" }],
      });
      assert.ok(!JSON.stringify(listed.body).includes("127.0.0.1"), "no operator URL leaks");
    });

    it("refuses an undeclared upstream or a missing model, naming the field, and creates nothing", async () => {
      const target = { kind: "base_model", baseModel: "vendor/large" };
      const unknown = await api("POST", `/v1/endpoints?${id.scope}`, {
        slug: uniqueSlug("bad"),
        target,
        upstream: { name: "elsewhere", model: "m" },
      });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.code, "unknown_upstream");
      assert.match(
        unknown.body.error.message,
        /"upstream\.name".*declared: down, no-key, recorder, svc-edge/,
      );
      const noModel = await api("POST", `/v1/endpoints?${id.scope}`, {
        slug: uniqueSlug("bad"),
        target,
        upstream: { name: "svc-edge" },
      });
      assert.equal(noModel.status, 400);
      assert.match(noModel.body.error.message, /upstream\.model/);
      // without an upstream, a base model this server lacks cannot be deployed
      const local = await api("POST", `/v1/endpoints?${id.scope}`, { slug: uniqueSlug("bad"), target });
      assert.equal(local.status, 400);
      assert.equal(local.body.error.code, "unknown_base_model");
      const list = await api("GET", `/v1/endpoints?${id.scope}`);
      assert.deepEqual(list.body.deployments, []);
    });

    it("creates a deployment of a model only the upstream serves, and the openai client gets its answers", async () => {
      const created = await api("POST", `/v1/endpoints?${id.scope}`, {
        slug: uniqueSlug("front"),
        target: { kind: "base_model", baseModel: "vendor/large" },
        upstream: { name: "svc-edge", model: "large-lora" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      deployment = created.body.deployment;
      assert.deepEqual(created.body.deployment.upstream, { name: "svc-edge", model: "large-lora" });
      const issued = await api("POST", `/v1/endpoints/${deployment.id}/keys`, { label: "app" });
      key = issued.body.key.plaintext;

      // greedy, so the tiny random model's answer is the same on every run
      const completion = await client(key).chat.completions.create({
        model: "x",
        messages,
        max_tokens: 5,
        temperature: 0,
      });
      // the upstream svc edge names its answers after its own slug
      assert.equal(completion.model, upstreamSlug);
      assert.ok((completion.choices[0].message.content ?? "").length > 0);
      assert.equal(completion.usage?.completion_tokens, 5);

      const stream = await client(key).chat.completions.create({
        model: "x",
        messages,
        max_tokens: 4,
        temperature: 0,
        stream: true,
      });
      let text = "";
      let finish: string | null = null;
      for await (const chunk of stream) {
        assert.equal(chunk.model, upstreamSlug);
        text += chunk.choices[0]?.delta?.content ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.ok(text.length > 0);
      assert.equal(finish, "length");
    });

    it("forwards POST /v1/responses to the upstream's /responses, whole and streamed, and meters the usage it reports", async () => {
      const issued = await api("POST", `/v1/endpoints/${deployment.id}/keys`, { label: "responses" });
      const responses = client(issued.body.key.plaintext).responses;
      const whole = await responses.create({
        model: "x",
        input: "Say something.",
        max_output_tokens: 4,
        temperature: 0,
      });
      // the upstream svc edge names its answers after its own slug
      assert.equal(whole.model, upstreamSlug);
      assert.equal(whole.usage?.output_tokens, 4);
      const stream = responses.stream({ model: "x", input: "Say something.", max_output_tokens: 3 });
      let deltas = "";
      stream.on("response.output_text.delta", (event) => {
        deltas += event.delta;
      });
      const streamed = await stream.finalResponse();
      assert.equal(streamed.model, upstreamSlug);
      assert.equal(deltas, streamed.output_text);
      const expected = {
        requests: 2,
        promptTokens: (whole.usage?.input_tokens ?? 0) + (streamed.usage?.input_tokens ?? 0),
        completionTokens: 4 + (streamed.usage?.output_tokens ?? 0),
      };
      await until("the forwarded responses' usage is on the key", async () => {
        const listed = await api("GET", `/v1/endpoints/${deployment.id}/keys`);
        const usage = listed.body.keys.find((k: { id: string }) => k.id === issued.body.key.id)?.usage;
        return (
          usage?.requests === expected.requests &&
          usage.promptTokens === expected.promptTokens &&
          usage.completionTokens === expected.completionTokens
        );
      });
    });

    it("keeps auth at the front edge: no key, or the upstream's own key, is a 401", async () => {
      const none = await fetch(`${server.edgeUrl}/d/${deployment.slug}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages }),
      });
      assert.equal(none.status, 401);
      await assert.rejects(
        client(upstreamKey).chat.completions.create({ model: "x", messages, max_tokens: 2 }),
        (error: InstanceType<typeof OpenAI.APIError>) => error.status === 401,
      );
    });

    it("sends the operator's key and the upstream model name, passing every other field through", async () => {
      assert.equal((await patch({ upstream: { name: "recorder", model: "served-name" } })).status, 200);
      const completion = await client(key).chat.completions.create({
        model: "what-the-client-said",
        messages,
        max_tokens: 3,
        logprobs: true,
        user: "u-1",
      });
      assert.equal(completion.choices[0].message.content, "recorded");
      const sent = recorder.requests.at(-1);
      assert.ok(sent);
      assert.equal(sent.authorization, "Bearer operator-key");
      assert.equal(sent.body.model, "served-name");
      assert.equal(sent.body.logprobs, true);
      assert.equal(sent.body.user, "u-1");
      assert.deepEqual(sent.body.messages, messages);
    });

    it("answers 502 in the OpenAI shape when the upstream is down or refuses the server's key", async () => {
      assert.equal((await patch({ upstream: { name: "no-key", model: "m" } })).status, 200);
      await assert.rejects(
        client(key).chat.completions.create({ model: "x", messages, max_tokens: 2 }),
        (error: InstanceType<typeof OpenAI.APIError>) =>
          error.status === 502 &&
          error.code === "upstream_auth_failed" &&
          /SVC_UPSTREAM_KEY_NO_KEY/.test(error.message),
      );
      assert.equal((await patch({ upstream: { name: "down", model: "m" } })).status, 200);
      await assert.rejects(
        client(key).chat.completions.create({ model: "x", messages, max_tokens: 2 }),
        (error: InstanceType<typeof OpenAI.APIError>) =>
          error.status === 502 && error.code === "upstream_unavailable",
      );
    });

    it("refuses to drop the upstream while the target is not served here, and changes nothing", async () => {
      const dropped = await patch({ upstream: null });
      assert.equal(dropped.status, 400);
      assert.equal(dropped.body.error.code, "unknown_base_model");
      const kept = await api("GET", `/v1/endpoints/${deployment.id}`);
      assert.deepEqual(kept.body.deployment.upstream, { name: "down", model: "m" });
      // with a local target it serves from this server's engine again
      const local = await patch({ upstream: null, target: { kind: "base_model", baseModel: TINY_MODEL } });
      assert.equal(local.status, 200);
      assert.equal(local.body.deployment.upstream, null);
      const completion = await client(key).chat.completions.create({ model: "x", messages, max_tokens: 2 });
      assert.equal(completion.model, deployment.slug);
    });

    it("a disabled forwarded deployment is a 404 and the upstream is not asked", async () => {
      await patch({ upstream: { name: "recorder", model: "served-name" } });
      const before = recorder.requests.length;
      assert.equal((await patch({ enabled: false })).status, 200);
      await assert.rejects(
        client(key).chat.completions.create({ model: "x", messages, max_tokens: 2 }),
        (error: InstanceType<typeof OpenAI.APIError>) => error.status === 404,
      );
      assert.equal(recorder.requests.length, before);
    });
  });
}
