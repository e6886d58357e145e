// Hostile requests to the newest surfaces of a real server process: JSON
// Schemas built to exhaust the stack or the event loop (a $ref chain twenty
// thousand links long, tens of thousands of properties or enum values, a
// hundred tools' schemas) are 400 unsupported_schema naming the field, at the
// edge and on /v1/inference/chat, while /healthz keeps answering; clients that
// hang up mid-body leave no error in the log and no file behind; exports
// refuse an over-long base model name, are invisible to other orgs, and one
// org cannot take the whole export queue.
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  call,
  deploymentWithKey,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  until,
} from "./harness.js";

type Server = ServerProcess & { dataDir: string; cleanup(): Promise<void> };

function refChain(links: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < links; i++) defs[`a${i}`] = { $ref: `#/$defs/a${i + 1}` };
  defs[`a${links}`] = { type: "string" };
  return { $defs: defs, $ref: "#/$defs/a0" };
}

const manyProperties = (count: number) => {
  const properties = Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`p${i}`, { type: "string" }]),
  );
  return { type: "object", properties, required: Object.keys(properties) };
};

const format = (schema: unknown) => ({ type: "json_schema", json_schema: { name: "out", schema } });
const tools = (count: number, properties: number) =>
  Array.from({ length: count }, (_, i) => ({
    type: "function",
    function: { name: `tool_${i}`, parameters: manyProperties(properties) },
  }));

/** The slowest /healthz answer while `work` runs (one probe every 10 ms). */
async function slowestHealth(apiUrl: string, work: Promise<unknown>): Promise<number> {
  let done = false;
  let slowest = 0;
  const probing = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(`${apiUrl}/healthz`)).text();
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  await work.finally(() => {
    done = true;
  });
  await probing;
  return slowest;
}

/** How many files and folders are under `dir` (0 when it does not exist yet). */
const entriesUnder = (dir: string) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).length : 0);

/** Sends the head of a POST and part of its body, then hangs up. */
function hangUpMidBody(url: string, path: string, token: string, contentType: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: ${contentType}\r\nContent-Length: 100000\r\n\r\n{"messages":`,
      );
      setTimeout(() => socket.destroy(), 100);
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve());
  });
}

describe("hostile requests to the newest surfaces", () => {
  let server: Server;
  let id: Identity;
  let chatPath: string;
  let key: string;

  before(async () => {
    server = await serverFor("sqlite");
    id = await newIdentity(server.apiUrl);
    const deployed = await deploymentWithKey(server.apiUrl, id, "hostile");
    chatPath = `/d/${deployed.deployment.slug}/v1/chat/completions`;
    key = deployed.key.plaintext;
  });
  after(() => server?.cleanup());

  it("hostile schemas are 400 unsupported_schema naming the field, and /healthz stays responsive", async () => {
    const edge = (extra: Record<string, unknown>) =>
      call(server.edgeUrl, "POST", chatPath, {
        token: key,
        json: { model: "x", max_tokens: 4, messages: [{ role: "user", content: "hi" }], ...extra },
      });
    const cases: [Promise<{ status: number; body: { error: { message: string; code: string } } }>, RegExp][] =
      [
        [
          edge({ response_format: format(refChain(20_000)) }),
          /^"response_format\.json_schema\.schema" \/\$defs\/a\d+: the schema nests more than 256 schemas deep/,
        ],
        [
          edge({ response_format: format(manyProperties(25_000)) }),
          /^"response_format\.json_schema\.schema" \/properties\/p1999: the schemas hold more than 2000 schemas in all/,
        ],
        [
          edge({ response_format: format({ enum: Array.from({ length: 60_000 }, (_, i) => `v${i}`) }) }),
          /^"response_format\.json_schema\.schema" \/enum: the schemas hold more than 1000 "enum" and "const" values/,
        ],
        // 128 tools of 40 properties each: every one is small, together they are over the budget
        [edge({ tools: tools(128, 40) }), /^"tools\[48\]\.function\.parameters" \/properties\/p31: /],
        [
          call(server.apiUrl, "POST", "/v1/inference/chat", {
            token: id.token,
            json: {
              baseModel: TINY_MODEL,
              messages: [{ role: "user", content: "hi" }],
              responseFormat: format(refChain(20_000)),
            },
          }),
          /^"responseFormat\.json_schema\.schema" \/\$defs\/a\d+: /,
        ],
      ];
    const all = Promise.all(cases.map(([reply]) => reply));
    const slowest = await slowestHealth(server.apiUrl, all);
    for (const [i, reply] of (await all).entries()) {
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.equal(reply.body.error.code, "unsupported_schema");
      assert.match(reply.body.error.message, cases[i][1]);
    }
    // Before the limits the $ref chain overflowed the stack (500) and 25,000 properties held the loop for seconds.
    assert.ok(
      slowest < 2000,
      `/healthz took ${slowest.toFixed(0)} ms while the hostile schemas were refused`,
    );
    const small = await edge({});
    assert.equal(small.status, 200);
    assert.doesNotMatch(server.output(), /RangeError|failed/);
  });

  it("a schema within the limits still constrains the answer", async () => {
    const schema = manyProperties(3);
    const reply = await call(server.edgeUrl, "POST", chatPath, {
      token: key,
      json: {
        model: "x",
        max_tokens: 200,
        messages: [{ role: "user", content: "hi" }],
        response_format: format(schema),
      },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const choice = reply.body.choices[0];
    if (choice.finish_reason === "stop")
      assert.deepEqual(Object.keys(JSON.parse(choice.message.content)), ["p0", "p1", "p2"]);
    else assert.match(choice.message.content, /^\{"p0":/);
  });

  it("clients hanging up mid-body log no failure and leave no file", async () => {
    const datasetsDir = join(server.dataDir, "datasets");
    const exportsDir = join(server.dataDir, "exports");
    const [datasetsBefore, exportsBefore] = [entriesUnder(datasetsDir), entriesUnder(exportsDir)];
    await Promise.all([
      hangUpMidBody(server.edgeUrl, chatPath, key, "application/json"),
      hangUpMidBody(server.apiUrl, `/v1/exports?${id.scope}`, id.token, "application/json"),
      hangUpMidBody(server.apiUrl, `/v1/datasets?${id.scope}&name=x.jsonl`, id.token, "application/x-ndjson"),
      hangUpMidBody(server.apiUrl, "/v1/models/pull", id.token, "application/json"),
    ]);
    const health = await call(server.apiUrl, "GET", "/healthz");
    assert.equal(health.status, 200);
    await new Promise((r) => setTimeout(r, 200));
    assert.doesNotMatch(server.output(), /failed|aborted/);
    assert.equal(entriesUnder(datasetsDir), datasetsBefore);
    assert.equal(entriesUnder(exportsDir), exportsBefore);
  });

  it("exports refuse an over-long base model name, and another org sees none of them", async () => {
    const long = await call(server.apiUrl, "POST", `/v1/exports?${id.scope}`, {
      token: id.token,
      json: { format: "gguf", baseModel: `a/${"b".repeat(100_000)}` },
    });
    assert.equal(long.status, 400);
    assert.deepEqual(long.body, {
      error: { message: '"baseModel" must be at most 300 characters', code: "invalid_request" },
    });
    const started = await call(server.apiUrl, "POST", `/v1/exports?${id.scope}`, {
      token: id.token,
      json: { format: "gguf", baseModel: TINY_MODEL },
    });
    assert.equal(started.status, 202);
    const exportId = started.body.export.id as string;
    const ready = await until("the export to finish", async () => {
      const info = (await call(server.apiUrl, "GET", `/v1/exports/${exportId}`, { token: id.token })).body
        .export;
      return info.status !== "running" && info;
    });
    assert.equal(ready.status, "ready");
    const other = await newIdentity(server.apiUrl);
    const file = ready.files[0].path as string;
    for (const [method, path] of [
      ["GET", `/v1/exports/${exportId}`],
      ["GET", `/v1/exports/${exportId}/${file}`],
      ["DELETE", `/v1/exports/${exportId}`],
    ]) {
      const reply = await call(server.apiUrl, method, path, { token: other.token });
      assert.equal(reply.status, 404, `${method} ${path}`);
      assert.equal(reply.body.error.code, "not_found");
    }
    const traversal = await call(server.apiUrl, "GET", `/v1/exports/${exportId}/..%2Fmanifest.json`, {
      token: id.token,
    });
    assert.equal(traversal.status, 404);
    const removed = await Promise.all(
      [1, 2].map(() => call(server.apiUrl, "DELETE", `/v1/exports/${exportId}`, { token: id.token })),
    );
    assert.deepEqual(removed.map((r) => r.status).sort(), [200, 404]);
  });

  it("one org's burst of exports takes at most half the queue; another org still gets one", async () => {
    const burst = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(server.apiUrl, "POST", `/v1/exports?${id.scope}`, {
          token: id.token,
          json: { format: "merged", baseModel: TINY_MODEL },
        }),
      ),
    );
    const statuses = burst.map((r) => r.status);
    assert.ok(statuses.filter((s) => s === 202).length <= 4, statuses.join(","));
    const refused = burst.filter((r) => r.status === 429);
    assert.ok(refused.length >= 4, statuses.join(","));
    assert.equal(refused[0].body.error.code, "too_many_exports");
    assert.match(
      refused[0].body.error.message,
      new RegExp(`^org ${id.orgSlug} has \\d exports running or queued on this server \\(at most 4\\)`),
    );
    const other = await newIdentity(server.apiUrl);
    const theirs = await call(server.apiUrl, "POST", `/v1/exports?${other.scope}`, {
      token: other.token,
      json: { format: "merged", baseModel: TINY_MODEL },
    });
    assert.equal(theirs.status, 202, JSON.stringify(theirs.body));
  });

  it("Hub revisions with empty or dot-led parts are refused before the Hub or the cache is touched", async () => {
    for (const revision of ["main/./x", "a//b", "x/", ".git", "refs/.hidden", "../x"]) {
      const pulled = await call(server.apiUrl, "POST", "/v1/models/pull", {
        token: id.token,
        json: { model: `test-org/m@${revision}` },
      });
      assert.equal(pulled.status, 400, revision);
      assert.match(pulled.body.error.message, /^"model": ".*" is not a Hub model id/);
      const dataset = await call(server.apiUrl, "POST", `/v1/datasets?${id.scope}`, {
        token: id.token,
        json: { huggingface: { name: "test-org/d", split: "train", revision } },
      });
      assert.equal(dataset.status, 400, revision);
      assert.match(
        dataset.body.error.message,
        /^"huggingface\.revision": ".*" is not a branch, tag or commit sha/,
      );
    }
    // what git names a revision still parses (here refused only by the default policy, which downloads nothing)
    const pr = await call(server.apiUrl, "POST", "/v1/models/pull", {
      token: id.token,
      json: { model: "test-org/m@refs/pr/1" },
    });
    assert.equal(pr.body.error.code, "hub_model_refused", JSON.stringify(pr.body));
  });

  it("a kind or field named after Object.prototype's members is a 400 naming it, not a 500", async () => {
    for (const kind of ["constructor", "__proto__", "toString"]) {
      const reply = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
        token: id.token,
        json: { slug: "proto-kind", target: { kind } },
      });
      assert.equal(reply.status, 400, `${kind}: ${JSON.stringify(reply.body)}`);
      assert.match(reply.body.error.message, /^"target\.kind" must be one of /);
    }
    const extra = await call(server.apiUrl, "POST", "/v1/models/pull", {
      token: id.token,
      body: '{"model":"test-org/m","constructor":{}}',
      headers: { "content-type": "application/json" },
    });
    assert.deepEqual(extra.body, {
      error: { message: '"constructor" is not a known field', code: "invalid_request" },
    });
  });
});
