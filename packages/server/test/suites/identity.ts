// Auth, /me, projects and base models; bad input names the field and changes nothing.
import assert from "node:assert/strict";
import { it } from "node:test";
import { call, newIdentity, type ServerProcess, TINY_MODEL } from "../harness.js";

export function identityTests(server: () => ServerProcess) {
  it("answers /healthz on the API and the edge", async () => {
    assert.equal((await call(server().apiUrl, "GET", "/healthz")).status, 200);
    assert.equal((await call(server().edgeUrl, "GET", "/healthz")).status, 200);
  });

  it("mints anonymous identities with a personal org, and /me describes them", async () => {
    const auth = await call(server().apiUrl, "POST", "/v1/auth/anonymous");
    assert.equal(auth.status, 201);
    assert.match(auth.body.token, /^svc_tok_[0-9A-Za-z]{40}$/);
    assert.match(auth.body.org.slug, /^anon-[a-z0-9]{8}$/);
    const me = await call(server().apiUrl, "GET", "/v1/me", { token: auth.body.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.mode, "anonymous");
    assert.deepEqual(me.body.orgs, [auth.body.org]);
  });

  it("refuses /v1 routes without a valid bearer token (401, one error shape)", async () => {
    for (const token of [undefined, "svc_tok_not-a-real-token"]) {
      const reply = await call(server().apiUrl, "GET", "/v1/me", { token });
      assert.equal(reply.status, 401);
      assert.equal(reply.body.error.code, "unauthorized");
      assert.equal(typeof reply.body.error.message, "string");
    }
    const jwt = await call(server().apiUrl, "GET", "/v1/models", { token: "aaa.bbb.ccc" });
    assert.equal(jwt.status, 401);
  });

  it("publishes its OIDC settings (none configured) without a token", async () => {
    const reply = await call(server().apiUrl, "GET", "/v1/auth/config");
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { oidc: null });
  });

  it("creates and lists projects; a clash is 409 and bad input is 400 naming the field, changing nothing", async () => {
    const id = await newIdentity(server().apiUrl, "first");
    const api = server().apiUrl;
    const post = (json: unknown) => call(api, "POST", "/v1/projects", { token: id.token, json });
    const clash = await post({ orgSlug: id.orgSlug, slug: "first" });
    assert.equal(clash.status, 409);
    assert.equal(clash.body.error.code, "slug_taken");
    assert.match(clash.body.error.message, /"first" is already taken/);

    const cases: [unknown, RegExp][] = [
      [{ orgSlug: id.orgSlug, slug: "X" }, /"slug" must be at least 2 characters/],
      [{ orgSlug: id.orgSlug, slug: "Bad_Slug" }, /"slug" must match/],
      [{ orgSlug: id.orgSlug, slug: 5 }, /"slug" must be a string/],
      [{ orgSlug: id.orgSlug }, /"slug" is required/],
      [{ orgSlug: id.orgSlug, slug: "okay", color: "red" }, /"color" is not a known field/],
      [[1, 2], /"body" must be a JSON object/],
    ];
    for (const [json, message] of cases) {
      const reply = await post(json);
      assert.equal(reply.status, 400, JSON.stringify(json));
      assert.equal(reply.body.error.code, "invalid_request");
      assert.match(reply.body.error.message, message);
    }
    const malformed = await call(api, "POST", "/v1/projects", {
      token: id.token,
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, "invalid_json");
    const huge = await call(api, "POST", "/v1/projects", {
      token: id.token,
      json: { orgSlug: id.orgSlug, slug: "big", name: "x".repeat(2 * 1024 * 1024) },
    });
    assert.equal(huge.status, 413);
    assert.equal(huge.body.error.code, "payload_too_large");

    const list = await call(api, "GET", `/v1/projects?orgSlug=${id.orgSlug}`, { token: id.token });
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.projects.map((p: { slug: string }) => p.slug),
      ["first"],
    );
  });

  it("hides another org's projects (404) and requires the org scope", async () => {
    const a = await newIdentity(server().apiUrl);
    const b = await newIdentity(server().apiUrl);
    const peek = await call(server().apiUrl, "GET", `/v1/projects?orgSlug=${a.orgSlug}`, { token: b.token });
    assert.equal(peek.status, 404);
    const write = await call(server().apiUrl, "POST", "/v1/projects", {
      token: b.token,
      json: { orgSlug: a.orgSlug, slug: "intrude" },
    });
    assert.equal(write.status, 404);
    const missing = await call(server().apiUrl, "GET", "/v1/projects", { token: a.token });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /"orgSlug" is required/);
  });

  it("lists the base models it serves", async () => {
    const id = await newIdentity(server().apiUrl);
    const reply = await call(server().apiUrl, "GET", "/v1/models", { token: id.token });
    assert.equal(reply.status, 200);
    const tiny = reply.body.models.find((m: { name: string }) => m.name === TINY_MODEL);
    assert.ok(tiny, JSON.stringify(reply.body));
    assert.ok(tiny.parameters > 0);
    assert.equal(tiny.contextLength, 2048);
    assert.equal(tiny.family, "llama");
    assert.equal(tiny.architecture, "LlamaForCausalLM");
    assert.deepEqual(tiny.loraTargets, [
      "q_proj",
      "k_proj",
      "v_proj",
      "o_proj",
      "gate_proj",
      "up_proj",
      "down_proj",
    ]);
  });
}
