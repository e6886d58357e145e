// Pulling Hub models through a real `svc server` against the loopback Hub
// (hub-server.ts): POST /v1/models/pull downloads a model into the Hugging
// Face cache with progress records, after which the Playground route and a
// deployment at the edge serve it; a chat or a deployment on a model that is
// not cached answers 409 model_downloading and starts the pull; the policy's
// refusal names the rule; gated, unknown and too-large models fail in the
// pull record; two pulls of one model share one download; HF_HUB_OFFLINE=1.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ModelPull as Pull } from "@svc/wire";
import type OpenAI from "openai";
import { call, edgeClient, type Identity, newIdentity, serverFor, tempDir, until } from "./harness.js";
import { hugeQwen3Repo, qwen3Repo } from "./hub-repos.js";
import { TestHub } from "./hub-server.js";

const PULLED = "test-org/qwen3-pulled";
const CHATTED = "test-org/qwen3-chatted";
const SHARED = "test-org/qwen3-pull-shared";
const GATED = "test-org/qwen3-pull-gated";
const HUGE = "test-org/qwen3-pull-huge";

describe("Hub model pulls through svc server", () => {
  let hub: TestHub;
  let hfHome: string;
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  const shas: Record<string, string> = {};
  const messages = [{ role: "user" as const, content: "hi" }];

  const pull = (model: string) =>
    call(server.apiUrl, "POST", "/v1/models/pull", { token: id.token, json: { model } });
  const getPull = async (pullId: string): Promise<Pull> => {
    const got = await call(server.apiUrl, "GET", `/v1/models/pull/${pullId}`, { token: id.token });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    return got.body.pull;
  };
  /** Every record seen while asking until the pull ends. */
  const pollToEnd = async (pullId: string): Promise<Pull[]> => {
    const seen: Pull[] = [];
    await until(
      `pull ${pullId} to end`,
      async () => {
        const record = await getPull(pullId);
        seen.push(record);
        return record.status !== "downloading";
      },
      60_000,
    );
    return seen;
  };
  const chat = (baseModel: string) =>
    call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
      token: id.token,
      json: { messages, baseModel, maxTokens: 4, seed: 1 },
    });

  before(async () => {
    hub = await TestHub.start();
    const repos = tempDir("hub-repos");
    shas.pulled = hub.addRepo({ repo: PULLED, dir: qwen3Repo(join(repos, "pulled")) });
    shas.chatted = hub.addRepo({ repo: CHATTED, dir: qwen3Repo(join(repos, "chatted")) });
    hub.addRepo({ repo: SHARED, dir: qwen3Repo(join(repos, "shared")) });
    hub.addRepo({ repo: GATED, dir: qwen3Repo(join(repos, "gated")), gated: true });
    hub.addRepo({ repo: HUGE, dir: hugeQwen3Repo(join(repos, "huge")) });
    hfHome = tempDir("hf-home");
    server = await serverFor("sqlite", ["--hub-models", "test-org/*,cached"], hub.serverEnv(hfHome));
    id = await newIdentity(server.apiUrl);
  });
  after(async () => {
    await server?.cleanup();
    await hub?.close();
  });

  it("pulls an uncached model with progress per file, then the Playground and a deployment at the edge serve it", async () => {
    hub.chunkDelayMs = 300;
    let seen: Pull[];
    let started: Pull;
    try {
      const created = await pull(PULLED);
      assert.equal(created.status, 202, JSON.stringify(created.body));
      started = created.body.pull;
      assert.equal(started.model, PULLED);
      assert.equal(started.status, "downloading");
      seen = await pollToEnd(started.id);
    } finally {
      hub.chunkDelayMs = 0;
    }
    const done = seen.at(-1)!;
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(done.revision, shas.pulled);
    assert.equal(done.fromCache, false);
    assert.equal(done.error, null);
    assert.ok(done.finishedAt);
    assert.deepEqual(done.files.map((f) => f.name).sort(), [
      "config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    assert.ok(done.bytesTotal > 60_000 && done.bytesDone === done.bytesTotal, JSON.stringify(done));
    // A record taken midway: the weights partly there, the whole less than done.
    const midway = seen.find(
      (p) => p.status === "downloading" && p.bytesTotal > 0 && p.bytesDone < p.bytesTotal,
    );
    assert.ok(midway, JSON.stringify(seen.map((p) => [p.status, p.bytesDone, p.bytesTotal])));
    const weights = midway.files.find((f) => f.name === "model.safetensors")!;
    assert.equal(weights.bytesTotal, done.files.find((f) => f.name === "model.safetensors")!.bytesTotal);
    assert.equal(midway.revision, shas.pulled);

    const listed = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
    const model = listed.body.models.find((m: { name: string }) => m.name === PULLED);
    assert.equal(model?.cached, true);
    assert.equal(model.revision, shas.pulled);

    const answered = await chat(PULLED);
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.equal(answered.body.model, PULLED);

    const slug = `pulled-${process.pid}`;
    const deployment = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug, target: { kind: "base_model", baseModel: PULLED } },
    });
    assert.equal(deployment.status, 201, JSON.stringify(deployment.body));
    const key = await call(server.apiUrl, "POST", `/v1/endpoints/${deployment.body.deployment.id}/keys`, {
      token: id.token,
      json: { label: "k" },
    });
    const client = edgeClient(server.edgeUrl, slug, key.body.key.plaintext);
    const completion = await client.chat.completions.create({
      model: "x",
      messages: [...messages],
      max_tokens: 2,
    });
    assert.equal(completion.object, "chat.completion");

    // The model leaves the cache (svc models rm): the edge answers 409 while the server pulls it again, then serves.
    rmSync(join(hfHome, "hub", `models--${PULLED.replace("/", "--")}`), { recursive: true, force: true });
    hub.chunkDelayMs = 500;
    let again: Pull;
    try {
      await assert.rejects(
        client.chat.completions.create({ model: "x", messages: [...messages], max_tokens: 2 }),
        (error: InstanceType<typeof OpenAI.APIError>) => {
          assert.equal(error.status, 409);
          assert.equal(error.code, "model_downloading");
          assert.match(
            error.message,
            /test-org\/qwen3-pulled is not in this server's Hugging Face cache yet/,
          );
          return true;
        },
      );
      again = (await call(server.apiUrl, "GET", "/v1/models", { token: id.token })).body.models.find(
        (m: { name: string }) => m.name === PULLED,
      );
      assert.equal(again, undefined);
    } finally {
      hub.chunkDelayMs = 0;
    }
    await until("the edge to serve the pulled model again", async () => {
      try {
        return (await client.chat.completions.create({ model: "x", messages: [...messages], max_tokens: 2 }))
          .object;
      } catch (error) {
        if ((error as { status?: number }).status === 409) return null;
        throw error;
      }
    });
  });

  it("a Playground chat on an uncached model answers 409 model_downloading and starts the pull; the next try answers", async () => {
    hub.chunkDelayMs = 300;
    let pullId: string;
    try {
      const first = await chat(CHATTED);
      assert.equal(first.status, 409, JSON.stringify(first.body));
      assert.equal(first.body.error.code, "model_downloading");
      pullId = /pull ([0-9a-f-]{36})/.exec(first.body.error.message)?.[1] ?? "";
      assert.match(first.body.error.message, /^"baseModel": Hub model test-org\/qwen3-chatted is not in/);
      assert.ok(first.body.error.message.includes(`GET /v1/models/pull/${pullId}`));
      // Asking again while it downloads joins the same pull.
      const second = await chat(CHATTED);
      assert.equal(second.status, 409);
      assert.ok(second.body.error.message.includes(`pull ${pullId}`), second.body.error.message);
      const joined = await pull(CHATTED);
      assert.equal(joined.body.pull.id, pullId);
    } finally {
      hub.chunkDelayMs = 0;
    }
    const end = (await pollToEnd(pullId)).at(-1)!;
    assert.equal(end.status, "completed", JSON.stringify(end));
    const answered = await chat(CHATTED);
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
  });

  it("an export of an uncached Hub model (a route that only reads it) says how to pull it and starts nothing", async () => {
    hub.clearRequests();
    const exported = await call(server.apiUrl, "POST", `/v1/exports?${id.scope}`, {
      token: id.token,
      json: { baseModel: SHARED, format: "merged" },
    });
    assert.equal(exported.status, 400, JSON.stringify(exported.body));
    assert.equal(exported.body.error.code, "unknown_base_model");
    assert.match(
      exported.body.error.message,
      /POST \/v1\/models\/pull \{"model":"test-org\/qwen3-pull-shared"\}/,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(hub.requests, []);
  });

  it("shares one download between two pulls of the same model", async () => {
    hub.clearRequests();
    hub.chunkDelayMs = 200;
    try {
      const [a, b] = await Promise.all([pull(SHARED), pull(SHARED)]);
      assert.equal(a.status, 202);
      assert.equal(b.status, 202);
      assert.equal(a.body.pull.id, b.body.pull.id);
      const end = (await pollToEnd(a.body.pull.id)).at(-1)!;
      assert.equal(end.status, "completed", JSON.stringify(end));
    } finally {
      hub.chunkDelayMs = 0;
    }
    const weights = hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET");
    assert.equal(weights.length, 1, JSON.stringify(weights));
    assert.equal(hub.requestsTo("/resolve/").filter((r) => r.path.endsWith("/config.json")).length, 1);
  });

  it("pulling a cached model again asks the Hub where main points and fetches nothing", async () => {
    hub.clearRequests();
    const created = await pull(SHARED);
    const end = (await pollToEnd(created.body.pull.id)).at(-1)!;
    assert.equal(end.status, "completed");
    assert.equal(end.fromCache, true);
    assert.equal(hub.requestsTo("/lfs-blobs/").length, 0);
  });

  it("refuses a model --hub-models does not allow, naming the rule, and asks the Hub nothing", async () => {
    hub.clearRequests();
    const refused = await pull("other-org/some-model");
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "hub_model_refused");
    assert.match(refused.body.error.message, /^"model": .*svc server --hub-models test-org\/\*,cached/);
    const chatRefused = await chat("other-org/some-model");
    assert.equal(chatRefused.status, 400);
    assert.equal(chatRefused.body.error.code, "unknown_base_model");
    assert.match(chatRefused.body.error.message, /--hub-models test-org\/\*,cached/);
    assert.equal(hub.requests.length, 0);
    for (const [body, pattern] of [
      [{}, /"model"/],
      [{ model: "svc/pico-llama" }, /not a Hub model id/],
      [{ model: "test/tiny" }, /never fetched from the Hub/],
    ] as const) {
      const bad = await call(server.apiUrl, "POST", "/v1/models/pull", { token: id.token, json: body });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.match(bad.body.error.message, pattern);
    }
    const unknown = await call(server.apiUrl, "GET", "/v1/models/pull/nope", { token: id.token });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, "not_found");
    const anonymous = await call(server.apiUrl, "POST", "/v1/models/pull", { json: { model: PULLED } });
    assert.equal(anonymous.status, 401);
  });

  it("a gated repo without a token, an unknown repo and a model too large fail in the pull record", async () => {
    const cases = [
      [GATED, "hub_gated", /HF_TOKEN/],
      ["test-org/no-such-model", "hub_not_found", /not found on the Hub/],
      [HUGE, "model_too_large", /needs about [\d.]+ (GB|TB) to load .* this machine has/],
    ] as const;
    for (const [model, code, message] of cases) {
      const created = await pull(model);
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const end = (await pollToEnd(created.body.pull.id)).at(-1)!;
      assert.equal(end.status, "failed", JSON.stringify(end));
      assert.equal(end.error?.code, code, JSON.stringify(end));
      assert.match(end.error!.message, message);
    }
    // A chat on the failed model reports the pull's reason (and starts no new one) for a while.
    hub.clearRequests();
    const failed = await chat(GATED);
    assert.equal(failed.status, 400);
    assert.equal(failed.body.error.code, "hub_gated");
    assert.match(failed.body.error.message, /could not be downloaded \(pull [0-9a-f-]{36}\): .*HF_TOKEN/);
    assert.equal(hub.requests.length, 0);
    // Nothing of the too-large model but its config was fetched.
    assert.ok(
      !hub.requestsTo(HUGE).some((r) => !r.path.endsWith("config.json") && r.path.includes("/resolve/")),
    );
  });
});

describe("Hub model pulls with HF_HUB_OFFLINE=1", () => {
  it("fails the pull of an uncached model naming HF_HUB_OFFLINE, asking the Hub nothing", async () => {
    const hub = await TestHub.start();
    hub.addRepo({ repo: PULLED, dir: qwen3Repo(join(tempDir("hub-repos"), "pulled")) });
    const server = await serverFor("sqlite", ["--hub-models", "test-org/*"], {
      ...process.env,
      HF_HOME: tempDir("hf-home"),
      HF_ENDPOINT: hub.url,
      HF_HUB_OFFLINE: "1",
    });
    try {
      const id = await newIdentity(server.apiUrl);
      const created = await call(server.apiUrl, "POST", "/v1/models/pull", {
        token: id.token,
        json: { model: PULLED },
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      const end = await until("the pull to fail", async () => {
        const got = await call(server.apiUrl, "GET", `/v1/models/pull/${created.body.pull.id}`, {
          token: id.token,
        });
        return got.body.pull.status === "failed" ? (got.body.pull as Pull) : null;
      });
      assert.equal(end.error?.code, "hub_offline");
      assert.match(end.error!.message, /HF_HUB_OFFLINE=1/);
      assert.deepEqual(hub.requests, []);
    } finally {
      await server.cleanup();
      await hub.close();
    }
  });
});
