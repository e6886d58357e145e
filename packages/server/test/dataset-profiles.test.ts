// Dataset profiles through `svc server` (docs/datasets.md#profile): started at
// upload or by the first GET, computed in a child process while the API keeps
// answering, then read for any maxLength; errors in the API's one shape.
// The tiny model's tokenizer has one token per byte and ChatML, so a chat row
// with a user content of N bytes and an answer of M is 20 + N prompt tokens and
// M + 1 answer tokens (the content and <|im_end|>).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
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
  uploadDataset,
} from "./harness.js";

const x = (n: number) => "x".repeat(n);
const chat = (user: string, answer: string) =>
  JSON.stringify({
    messages: [
      { role: "user", content: user },
      { role: "assistant", content: answer },
    ],
  });
// Rows (prompt, answer, total): 22/2/24 three times, 30/6/36, 120/51/171, 25/201/226.
const DATASET = `${[
  chat("ab", "x"),
  chat("ab", "x"),
  JSON.stringify({ prompt: "ab", completion: "x" }),
  chat(x(10), x(5)),
  chat(x(100), x(50)),
  JSON.stringify({ prompt: x(5), completion: x(200) }),
].join("\n")}\n`;

const profilePath = (datasetId: string, query: string) => `/v1/datasets/${datasetId}/profile?${query}`;

async function readyProfile(apiUrl: string, id: Identity, datasetId: string, query: string) {
  return until("a ready profile", async () => {
    const r = await call(apiUrl, "GET", profilePath(datasetId, query), { token: id.token });
    assert.ok(r.status === 200 || r.status === 202, JSON.stringify(r.body));
    return r.body.profile.status === "pending" ? null : r;
  });
}

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`dataset profiles (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    before(async () => {
      server = await serverFor(backend);
      id = await newIdentity(server.apiUrl);
    });
    after(async () => server?.cleanup());

    it("an upload naming a base model starts the profile; it is read for any maxLength", async () => {
      const upload = await call(
        server.apiUrl,
        "POST",
        `/v1/datasets?${id.scope}&name=rows.jsonl&baseModel=${TINY_MODEL}&maxLength=64`,
        { token: id.token, body: DATASET, headers: { "content-type": "application/x-ndjson" } },
      );
      assert.equal(upload.status, 201, JSON.stringify(upload.body));
      const datasetId = upload.body.dataset.id;
      assert.equal(upload.body.dataset.rows, 6);
      assert.equal(upload.body.profile.datasetId, datasetId);
      assert.equal(upload.body.profile.baseModel, TINY_MODEL);
      assert.equal(upload.body.profile.maxLength, 64);
      assert.match(upload.body.profile.status, /^(pending|ready)$/);

      const { status, body } = await readyProfile(
        server.apiUrl,
        id,
        datasetId,
        `baseModel=${TINY_MODEL}&maxLength=64`,
      );
      assert.equal(status, 200);
      const p = body.profile;
      assert.equal(p.status, "ready");
      assert.equal(p.rows, 6);
      // Totals sorted 24 24 24 36 171 226: nearest-rank p50 is the 3rd, p95 the 6th.
      assert.deepEqual(p.tokens.total, { p50: 24, p95: 226, max: 226, mean: 84.2 });
      assert.deepEqual(p.tokens.prompt, { p50: 22, p95: 120, max: 120, mean: 40.2 });
      assert.deepEqual(p.tokens.answer, { p50: 2, p95: 201, max: 201, mean: 44 });
      assert.equal(p.tokens.sum, 505);
      assert.equal(p.overMaxLength, 2);
      assert.deepEqual(p.roles, { system: 0, user: 6, assistant: 6, tool: 0 });
      assert.deepEqual(p.turns, { 1: 6 });
      assert.deepEqual(p.duplicates, {
        rows: 2,
        groups: 1,
        first: [
          { row: 2, duplicateOf: 1 },
          { row: 3, duplicateOf: 1 },
        ],
      });
      assert.deepEqual(p.longest[0], { row: 6, tokens: 226, promptTokens: 25, answerTokens: 201 });
      // max(p95 226, longest answer 201 + the least prompt 20) → 256.
      assert.deepEqual(p.suggestedMaxLength, { maxLength: 256, rowsOver: 0, cappedAtContext: false });
      assert.equal(
        p.histogram.reduce((n: number, b: { rows: number }) => n + b.rows, 0),
        6,
      );
      assert.match(p.computedAt, /^\d{4}-\d\d-\d\dT/);

      // Another maxLength reads the same stored profile.
      const wider = await call(
        server.apiUrl,
        "GET",
        profilePath(datasetId, `baseModel=${TINY_MODEL}&maxLength=200`),
        {
          token: id.token,
        },
      );
      assert.equal(wider.status, 200);
      assert.equal(wider.body.profile.overMaxLength, 1);
      assert.equal(wider.body.profile.computedAt, p.computedAt);
      const byDefault = await call(server.apiUrl, "GET", profilePath(datasetId, `baseModel=${TINY_MODEL}`), {
        token: id.token,
      });
      assert.equal(byDefault.body.profile.maxLength, 512);
      assert.equal(byDefault.body.profile.overMaxLength, 0);
    });

    it("a dataset uploaded without a base model is profiled by its first GET", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, DATASET);
      const first = await call(server.apiUrl, "GET", profilePath(dataset.id, `baseModel=${TINY_MODEL}`), {
        token: id.token,
      });
      if (first.body.profile.status === "pending") {
        assert.equal(first.status, 202);
        assert.equal(first.headers.get("retry-after"), "1");
        assert.ok(first.body.profile.progress >= 0 && first.body.profile.progress <= 1);
      }
      const { body } = await readyProfile(server.apiUrl, id, dataset.id, `baseModel=${TINY_MODEL}`);
      assert.equal(body.profile.tokens.sum, 505);
    });

    it("errors: no or unknown base model, a bad maxLength, another org's dataset", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, DATASET);
      const get = (query: string, token = id.token) =>
        call(server.apiUrl, "GET", profilePath(dataset.id, query), { token });
      const missing = await get("");
      assert.equal(missing.status, 400);
      assert.deepEqual(Object.keys(missing.body), ["error"]);
      assert.equal(missing.body.error.code, "invalid_request");
      assert.match(missing.body.error.message, /"baseModel" \(query parameter\) is required/);
      const unknown = await get("baseModel=nobody/nothing");
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.code, "unknown_base_model");
      assert.match(unknown.body.error.message, /available: test\/tiny/);
      const bad = await get(`baseModel=${TINY_MODEL}&maxLength=1`);
      assert.equal(bad.status, 400);
      assert.match(
        bad.body.error.message,
        /"maxLength" \(query parameter\) must be an integer from 2 to 131072/,
      );
      const stranger = await newIdentity(server.apiUrl, "other");
      const hidden = await get(`baseModel=${TINY_MODEL}`, stranger.token);
      assert.equal(hidden.status, 404);
      assert.equal(hidden.body.error.code, "not_found");
      const nothing = await call(server.apiUrl, "GET", profilePath("not-a-uuid", `baseModel=${TINY_MODEL}`), {
        token: id.token,
      });
      assert.equal(nothing.status, 404);
      // An upload naming an unknown model stores nothing.
      const before = (await call(server.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token })).body
        .datasets.length;
      const refused = await call(server.apiUrl, "POST", `/v1/datasets?${id.scope}&baseModel=nobody/nothing`, {
        token: id.token,
        body: DATASET,
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, "unknown_base_model");
      const afterCount = (await call(server.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token }))
        .body.datasets.length;
      assert.equal(afterCount, before);
    });
  });
}

describe("a large dataset's profile runs in the background (sqlite)", () => {
  // About 4 MB: seconds of tokenizing, in a child process.
  const LARGE = `${Array.from({ length: 8000 }, (_, i) => chat(`${i} ${x(300 + (i % 200))}`, x(20 + (i % 50)))).join("\n")}\n`;
  let server: ServerProcess & { cleanup(): Promise<void>; dataDir: string };
  let id: Identity;
  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
  });
  after(async () => server?.cleanup());

  it("the API answers at once while it runs, and reports progress", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, LARGE, "large.jsonl");
    const started = Date.now();
    const first = await call(server.apiUrl, "GET", profilePath(dataset.id, `baseModel=${TINY_MODEL}`), {
      token: id.token,
    });
    assert.equal(first.status, 202);
    assert.equal(first.body.profile.status, "pending");
    let slowest = 0;
    let sawProgress = false;
    await until(
      "the profile",
      async () => {
        const t = Date.now();
        const health = await call(server.apiUrl, "GET", "/healthz");
        slowest = Math.max(slowest, Date.now() - t);
        assert.equal(health.status, 200);
        const r = await call(server.apiUrl, "GET", profilePath(dataset.id, `baseModel=${TINY_MODEL}`), {
          token: id.token,
        });
        const p = r.body.profile;
        if (p.status === "pending" && p.progress > 0 && p.progress < 1) sawProgress = true;
        return p.status === "ready" ? p : null;
      },
      120_000,
    );
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `profiled 8000 rows (${(LARGE.length / 1e6).toFixed(1)} MB) in ${seconds.toFixed(1)} s; slowest /healthz ${slowest} ms`,
    );
    assert.ok(slowest < 1500, `the API stayed responsive (slowest /healthz: ${slowest} ms)`);
    assert.ok(sawProgress || seconds < 2, "progress between 0 and 1 was reported while it ran");
  });

  it("a server stopped mid-profile hands it back: the next server computes it", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, LARGE, "large.jsonl");
    const first = await call(server.apiUrl, "GET", profilePath(dataset.id, `baseModel=${TINY_MODEL}`), {
      token: id.token,
    });
    assert.equal(first.body.profile.status, "pending");
    assert.equal(await server.stop(), 0);
    const next = await startServerProcess({ dataDir: server.dataDir });
    try {
      const { body } = await readyProfile(next.apiUrl, id, dataset.id, `baseModel=${TINY_MODEL}`);
      assert.equal(body.profile.rows, 8000);
    } finally {
      await next.stop();
    }
  });
});
