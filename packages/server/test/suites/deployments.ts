// Deployments (/v1/endpoints) and their keys: defaults, slug rules, target
// validation, PATCH, DELETE, keys issue/list/revoke, org isolation.
import assert from "node:assert/strict";
import { before, it } from "node:test";
import {
  call,
  type Identity,
  identityWithFinishedJob,
  newIdentity,
  type ServerProcess,
  TINY_MODEL,
} from "../harness.js";

let counter = 0;
/** Deployment slugs are global to the server; each backend run has its own. */
export const uniqueSlug = (base: string) => `${base}-${process.pid}-${++counter}`;

export function deploymentTests(server: () => ServerProcess) {
  let id: Identity;
  let jobId: string;
  before(async () => {
    ({ id, jobId } = await identityWithFinishedJob(server().apiUrl));
  });
  const create = (json: unknown, who = id) =>
    call(server().apiUrl, "POST", `/v1/endpoints?${who.scope}`, { token: who.token, json });
  const list = async () =>
    (await call(server().apiUrl, "GET", `/v1/endpoints?${id.scope}`, { token: id.token })).body
      .deployments as { slug: string }[];

  it("creates a deployment with the server defaults and its serving URL", async () => {
    const slug = uniqueSlug("bot");
    const reply = await create({ slug, target: { kind: "adapter", adapter: { kind: "final", jobId } } });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    const d = reply.body.deployment;
    assert.equal(d.authMode, "fixed_api_key");
    assert.equal(d.enabled, true);
    assert.equal(d.customDomain, null);
    assert.equal(d.runRetentionMode, "days");
    assert.equal(d.runRetentionDays, 30);
    assert.equal(d.url, `http://${slug}.${server().deploymentDomain}/v1/chat/completions`);
    const got = await call(server().apiUrl, "GET", `/v1/endpoints/${d.id}`, { token: id.token });
    assert.deepEqual(got.body.deployment, d);
    assert.ok((await list()).some((x) => x.slug === slug));
  });

  it("rejects reserved and invalid slugs with 400 and a taken slug with 409, creating nothing", async () => {
    const target = { kind: "base_model", baseModel: TINY_MODEL };
    const countBefore = (await list()).length;
    for (const slug of ["www", "api", "admin"]) {
      const reply = await create({ slug, target });
      assert.equal(reply.status, 400);
      assert.equal(reply.body.error.code, "slug_reserved");
      assert.match(reply.body.error.message, new RegExp(`"${slug}" is a reserved name`));
    }
    for (const slug of ["a", "Upper", "trailing-", "-lead", "under_score", "x".repeat(51), ""]) {
      const reply = await create({ slug, target });
      assert.equal(reply.status, 400, slug);
      assert.equal(reply.body.error.code, "invalid_slug");
      assert.match(reply.body.error.message, /"slug" must be 2-50 characters/);
    }
    const slug = uniqueSlug("taken");
    assert.equal((await create({ slug, target })).status, 201);
    const other = await newIdentity(server().apiUrl);
    const clash = await create({ slug, target }, other);
    assert.equal(clash.status, 409);
    assert.equal(clash.body.error.code, "slug_taken");
    assert.equal(clash.body.error.message, `The slug "${slug}" is already taken. Choose another one.`);
    assert.equal((await list()).length, countBefore + 1);
  });

  it("validates the target against jobs, checkpoints and base models", async () => {
    const other = await newIdentity(server().apiUrl);
    const cases: [unknown, number, RegExp][] = [
      [
        { kind: "adapter", adapter: { kind: "final", jobId: "01a1fd64-0000-7000-8000-000000000000" } },
        400,
        /"target.adapter.jobId": no job/,
      ],
      [
        { kind: "adapter", adapter: { kind: "checkpoint", jobId, step: 42 } },
        400,
        /"target.adapter.step": .* no checkpoint at step 42/,
      ],
      [
        { kind: "base_model", baseModel: "no/such" },
        400,
        /"target.baseModel": base model "no\/such" is not served here/,
      ],
      [{ kind: "adapter" }, 400, /"target.adapter" is required/],
      [{ kind: "lora" }, 400, /"target.kind" must be one of "adapter", "base_model"/],
    ];
    for (const [target, status, message] of cases) {
      const reply = await create({ slug: uniqueSlug("t"), target });
      assert.equal(reply.status, status, JSON.stringify(target));
      assert.match(reply.body.error.message, message);
    }
    const foreignJob = await create(
      { slug: uniqueSlug("t"), target: { kind: "adapter", adapter: { kind: "final", jobId } } },
      other,
    );
    assert.equal(foreignJob.status, 400);
    const checkpoint = await create({
      slug: uniqueSlug("ck"),
      target: { kind: "adapter", adapter: { kind: "checkpoint", jobId, step: 1 } },
    });
    assert.equal(checkpoint.status, 201);
  });

  it("updates target, authMode, enabled and retention with PATCH, and deletes", async () => {
    const created = (
      await create({ slug: uniqueSlug("p"), target: { kind: "base_model", baseModel: TINY_MODEL } })
    ).body.deployment;
    const patch = (json: unknown) =>
      call(server().apiUrl, "PATCH", `/v1/endpoints/${created.id}`, { token: id.token, json });
    const updated = await patch({
      target: { kind: "adapter", adapter: { kind: "checkpoint", jobId, step: 2 } },
      authMode: "none",
      enabled: false,
      runRetentionDays: 7,
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(updated.body.deployment.target, {
      kind: "adapter",
      adapter: { kind: "checkpoint", jobId, step: 2 },
    });
    assert.equal(updated.body.deployment.authMode, "none");
    assert.equal(updated.body.deployment.enabled, false);
    assert.equal(updated.body.deployment.runRetentionDays, 7);
    const forever = await patch({ runRetentionMode: "forever" });
    assert.equal(forever.body.deployment.runRetentionDays, null);
    for (const [json, message] of [
      [{ slug: "rename" }, /"slug" is not a known field/],
      [{ authMode: "oauth" }, /"authMode" must be one of "fixed_api_key", "none"/],
      [{ enabled: "no" }, /"enabled" must be true or false/],
      [{ target: { kind: "base_model", baseModel: "x/y" } }, /"target.baseModel"/],
      [{ runRetentionMode: "days", runRetentionDays: 0 }, /"runRetentionDays" must be at least 1/],
    ] as [unknown, RegExp][]) {
      const reply = await patch(json);
      assert.equal(reply.status, 400, JSON.stringify(json));
      assert.match(reply.body.error.message, message);
    }
    const unchanged = await call(server().apiUrl, "GET", `/v1/endpoints/${created.id}`, { token: id.token });
    assert.equal(unchanged.body.deployment.runRetentionMode, "forever");
    assert.equal(unchanged.body.deployment.authMode, "none");
    const removed = await call(server().apiUrl, "DELETE", `/v1/endpoints/${created.id}`, { token: id.token });
    assert.equal(removed.status, 204);
    assert.equal(
      (await call(server().apiUrl, "GET", `/v1/endpoints/${created.id}`, { token: id.token })).status,
      404,
    );
  });

  it("issues keys (plaintext once, prefix, hash only), lists them without plaintext and revokes", async () => {
    const d = (await create({ slug: uniqueSlug("k"), target: { kind: "base_model", baseModel: TINY_MODEL } }))
      .body.deployment;
    const keys = `/v1/endpoints/${d.id}/keys`;
    for (const [json, message] of [
      [{ label: "" }, /"label" must not be empty/],
      [{ label: "x".repeat(81) }, /"label" must be at most 80 characters/],
      [{}, /"label" is required/],
      [{ label: "ok", scope: "all" }, /"scope" is not a known field/],
    ] as [unknown, RegExp][]) {
      const reply = await call(server().apiUrl, "POST", keys, { token: id.token, json });
      assert.equal(reply.status, 400);
      assert.match(reply.body.error.message, message);
    }
    const issued = await call(server().apiUrl, "POST", keys, { token: id.token, json: { label: "ci" } });
    assert.equal(issued.status, 201);
    const key = issued.body.key;
    assert.match(key.plaintext, /^svc_live_[0-9A-Za-z]{40}$/);
    assert.equal(key.prefix, key.plaintext.slice(0, 12));
    assert.equal(key.enabled, true);
    assert.equal(key.lastUsedAt, null);
    const listed = await call(server().apiUrl, "GET", keys, { token: id.token });
    assert.equal(listed.body.keys.length, 1);
    assert.equal(listed.body.keys[0].plaintext, undefined);
    assert.ok(!JSON.stringify(listed.body).includes(key.plaintext));
    const revoked = await call(server().apiUrl, "DELETE", `${keys}/${key.id}`, { token: id.token });
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.key.enabled, false);
    assert.equal(
      (
        await call(server().apiUrl, "DELETE", `${keys}/01a1fd64-0000-7000-8000-000000000000`, {
          token: id.token,
        })
      ).status,
      404,
    );
  });

  it("hides another org's deployments and keys (404)", async () => {
    const d = (
      await create({ slug: uniqueSlug("iso"), target: { kind: "base_model", baseModel: TINY_MODEL } })
    ).body.deployment;
    const other = await newIdentity(server().apiUrl);
    for (const [method, path, json] of [
      ["GET", `/v1/endpoints/${d.id}`],
      ["PATCH", `/v1/endpoints/${d.id}`, { enabled: false }],
      ["DELETE", `/v1/endpoints/${d.id}`],
      ["GET", `/v1/endpoints/${d.id}/keys`],
      ["POST", `/v1/endpoints/${d.id}/keys`, { label: "steal" }],
      ["GET", `/v1/endpoints?${id.scope}`],
    ] as [string, string, unknown?][]) {
      const reply = await call(server().apiUrl, method, path, { token: other.token, json });
      assert.equal(reply.status, 404, `${method} ${path}`);
    }
    const still = await call(server().apiUrl, "GET", `/v1/endpoints/${d.id}`, { token: id.token });
    assert.equal(still.body.deployment.enabled, true);
  });
}
