// Issue 42's "other findings" of the hostile-request probe, against a real
// server process on SQLite and on PostgreSQL: numbers that PostgreSQL's
// `real` could not store, lone UTF-16 surrogates in any JSON string, error
// messages that carried raw newlines, bidi marks and NUL (and a latin1-garbled
// X-Svc-Deployment), slugs whose case decided whether they resolved, dataset
// URL allow entries that opened every port (the server's own included), and
// the small ones: an empty PATCH bumping updatedAt, loose Last-Event-ID
// forms, and 2^53 refused as "not an integer". Each fails if its hole comes back.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import {
  type Backend,
  call,
  chatJsonl,
  createJob,
  deploymentWithKey,
  type Identity,
  newIdentity,
  type Reply,
  serverFor,
  TINY_MODEL,
  uploadDataset,
} from "./harness.js";

type Server = Awaited<ReturnType<typeof serverFor>>;

let slugCounter = 0;
const slug = (base: string) => `${base}-${process.pid}-${++slugCounter}`;

/** A loopback HTTP server that counts the requests it gets. */
async function sink(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const urls: string[] = [];
  const server = createServer((req, res) => {
    urls.push(req.url ?? "");
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    urls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A POST with exactly these headers, Host included (fetch will not send a Host of its own choosing). */
function rawPost(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  json: unknown,
): Promise<{ status: number; body: { error: { message: string; code: string } } }> {
  const url = new URL(baseUrl);
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The eval_fraction column of a job as the database itself holds it. */
async function storedEvalFraction(server: Server, jobId: string): Promise<number | null> {
  if (server.databaseUrl) {
    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    try {
      const result = await client.query("SELECT eval_fraction::text AS f FROM jobs WHERE id = $1", [jobId]);
      return result.rows[0].f === null ? null : Number(result.rows[0].f);
    } finally {
      await client.end();
    }
  }
  const db = new BetterSqlite3(join(server.dataDir, "svc.db"), { readonly: true });
  try {
    return (db.prepare("SELECT eval_fraction AS f FROM jobs WHERE id = ?").get(jobId) as { f: number | null })
      .f;
  } finally {
    db.close();
  }
}

/** No raw control, format (bidi) or separator character: what the probe found echoed. */
const RAW_UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

function hostileInputTests(backend: Backend) {
  let server: Server;
  let id: Identity;
  let datasetId: string;
  before(async () => {
    server = await serverFor(backend, ["--dataset-url-allow", "127.0.0.1"]);
    id = await newIdentity(server.apiUrl);
    datasetId = (await uploadDataset(server.apiUrl, id)).id;
  });
  after(async () => {
    await server?.cleanup();
  });
  const post = (path: string, json: unknown) => call(server.apiUrl, "POST", path, { token: id.token, json });
  const jobBody = (extra: Record<string, unknown>) => ({
    name: "n",
    baseModel: TINY_MODEL,
    datasetId,
    dryRun: true,
    ...extra,
  });

  it("stores any evalFraction in range exactly, on both stores, and never answers 500", async () => {
    for (const fraction of [5e-324, 1e-46, 1.2e-38, 0.123456789012345, 0.5]) {
      const reply = await post(`/v1/jobs?${id.scope}`, jobBody({ evalFraction: fraction }));
      assert.equal(reply.status, 201, `${fraction}: ${JSON.stringify(reply.body)}`);
      assert.equal(await storedEvalFraction(server, reply.body.job.id), fraction, String(fraction));
    }
    for (const fraction of [0, -5e-324, 0.5000000000000001, 1e308]) {
      const reply = await post(`/v1/jobs?${id.scope}`, jobBody({ evalFraction: fraction }));
      assert.equal(reply.status, 400, `${fraction}: ${JSON.stringify(reply.body)}`);
      assert.match(reply.body.error.message, /^"evalFraction" /);
    }
  });

  it("refuses lone surrogates in every JSON string, keys included, with a 400 naming the field", async () => {
    const { deployment, key } = await deploymentWithKey(server.apiUrl, id, slug("sur"));
    const cases: [string, unknown, string][] = [
      ["/v1/projects", { orgSlug: id.orgSlug, slug: "sur", name: "a\ud800b" }, "name"],
      [`/v1/jobs?${id.scope}`, jobBody({ name: "a\udc00" }), "name"],
      [
        `/v1/jobs?${id.scope}`,
        jobBody({ hyperparameters: { lora: { r: 4, alpha: 8, targetModules: ["q_proj", "\udbff"] } } }),
        "hyperparameters.lora.targetModules[1]",
      ],
      [`/v1/endpoints/${deployment.id}/keys`, { label: "k\ud800" }, "label"],
      [`/v1/endpoints/${deployment.id}/keys`, { "x\ud800": 1, label: "k" }, "x\\ud800"],
      [
        "/v1/inference/chat",
        { baseModel: TINY_MODEL, messages: [{ role: "user", content: "hi \ud83d" }] },
        "messages[0].content",
      ],
    ];
    for (const [path, json, field] of cases) {
      const reply = await post(path, json);
      assert.equal(reply.status, 400, `${path} ${field}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.code, "invalid_request");
      assert.equal(reply.body.error.message.startsWith(`"${field}" `), true, reply.body.error.message);
      assert.match(reply.body.error.message, /lone UTF-16 surrogate/);
    }
    // A well-formed pair is one character, accepted as before.
    const ok = await post(`/v1/endpoints/${deployment.id}/keys`, { label: "k\ud83d\ude00" });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.key.label, "k😀");
    const keys = await call(server.apiUrl, "GET", `/v1/endpoints/${deployment.id}/keys`, { token: id.token });
    assert.deepEqual(
      keys.body.keys.map((k: { label: string }) => k.label),
      ["k", "k😀"],
    );
    const edge = await call(server.edgeUrl, "POST", `/d/${deployment.slug}/v1/chat/completions`, {
      json: { messages: [{ role: "user", content: "\udfff" }] },
      headers: { authorization: `Bearer ${key.plaintext}` },
    });
    assert.equal(edge.status, 400, JSON.stringify(edge.body));
    assert.equal(edge.body.error.type, "invalid_request_error");
    assert.match(edge.body.error.message, /^"messages\[0\]\.content" .*lone UTF-16 surrogate/);
  });

  it("escapes newlines, bidi marks and NUL of user input in error messages, and decodes X-Svc-Deployment as UTF-8", async () => {
    const hostile = "ev\nil\u202eorg\u2028x";
    const messages: string[] = [];
    const expect = async (reply: Reply, status: number, what: string) => {
      assert.equal(reply.status, status, `${what}: ${JSON.stringify(reply.body)}`);
      const message = reply.body.error.message as string;
      assert.doesNotMatch(message, RAW_UNSAFE, `${what}: ${JSON.stringify(message)}`);
      messages.push(message);
      return message;
    };
    const org = await expect(await post("/v1/projects", { orgSlug: hostile, slug: "x1" }), 404, "orgSlug");
    assert.equal(org, `org "ev\\nil\\u202eorg\\u2028x" not found`);
    const key = await expect(
      await post("/v1/projects", { orgSlug: id.orgSlug, slug: "x1", [`${hostile}\u0000`]: 1 }),
      400,
      "key",
    );
    assert.equal(key, `"ev\\nil\\u202eorg\\u2028x\\u0000" is not a known field`);
    await expect(
      await call(server.apiUrl, "GET", `/v1/projects?orgSlug=${encodeURIComponent("a\n\u202eb")}`, {
        token: id.token,
      }),
      404,
      "query",
    );
    const { deployment } = await deploymentWithKey(server.apiUrl, id, slug("esc"));
    const revoke = await expect(
      await call(
        server.apiUrl,
        "DELETE",
        `/v1/endpoints/${deployment.id}/keys/${encodeURIComponent("k\n\u200f")}`,
        { token: id.token },
      ),
      404,
      "keyId",
    );
    assert.equal(revoke, `key "k\\n\\u200f" not found`);
    await expect(
      await post(`/v1/endpoints?${id.scope}`, {
        slug: "Bad\u202eSlug",
        target: { kind: "base_model", baseModel: TINY_MODEL },
      }),
      400,
      "slug",
    );
    await expect(
      await post(
        `/v1/jobs?${id.scope}`,
        jobBody({ hyperparameters: { lora: { r: 4, alpha: 8, targetModules: ["q\u202e"] } } }),
      ),
      400,
      "targetModules",
    );
    // The edge: the header's UTF-8 bytes (undici sends a string's code units as bytes) come back as the characters sent.
    const utf8Header = (text: string) => Buffer.from(text, "utf8").toString("latin1");
    for (const [sent, shown] of [
      ["café", `deployment "café" not found`],
      ["a\u202eb", `deployment "a\\u202eb" not found`],
    ] as const) {
      const edge = await call(server.edgeUrl, "POST", "/v1/chat/completions", {
        json: { messages: [{ role: "user", content: "hi" }] },
        headers: { "x-svc-deployment": utf8Header(sent) },
      });
      const message = await expect(edge, 404, sent);
      assert.equal(message, shown);
    }
    const pathSlug = await call(
      server.edgeUrl,
      "POST",
      `/d/${encodeURIComponent("x\u202ey")}/v1/chat/completions`,
      {
        json: { messages: [{ role: "user", content: "hi" }] },
      },
    );
    assert.equal(await expect(pathSlug, 404, "path slug"), `deployment "x\\u202ey" not found`);
    assert.equal(messages.length, 9);
  });

  it("resolves a deployment slug in any case, by Host, path and header alike", async () => {
    const { deployment } = await deploymentWithKey(server.apiUrl, id, slug("case"));
    const upper = deployment.slug.toUpperCase();
    const json = { messages: [{ role: "user", content: "hi" }] };
    const domain = server.deploymentDomain;
    const ways: [string, string, Record<string, string>][] = [
      ["Host", "/v1/chat/completions", { host: `${upper}.${domain.toUpperCase()}` }],
      ["path", `/d/${upper}/v1/chat/completions`, {}],
      ["header", "/v1/chat/completions", { "x-svc-deployment": upper }],
      ["lower path", `/d/${deployment.slug}/v1/chat/completions`, {}],
    ];
    for (const [way, path, headers] of ways) {
      // No key: a 401 shows the deployment was found (an unknown one is 404).
      const reply = await rawPost(server.edgeUrl, path, headers, json);
      assert.equal(reply.status, 401, `${way}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.code, "invalid_api_key", way);
    }
    const unknown = await call(server.edgeUrl, "POST", `/d/NO-SUCH-${upper}/v1/chat/completions`, { json });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.message, `deployment "no-such-${deployment.slug}" not found`);
  });

  it("never lets a dataset URL reach the server's own API or edge port, even on an allowed host", async () => {
    const apiPort = new URL(server.apiUrl).port;
    const edgePort = new URL(server.edgeUrl).port;
    const refused = await post(`/v1/datasets?${id.scope}`, { url: "http://10.9.8.7/x.jsonl" });
    assert.equal(refused.body.error.code, "dataset_fetch_failed");
    const redirector = await sink((req, res) => {
      const to = req.url === "/to-api" ? apiPort : req.url === "/to-edge" ? edgePort : null;
      if (to) res.writeHead(302, { location: `http://127.0.0.1:${to}/healthz` }).end();
      else res.end(chatJsonl(2));
    });
    try {
      for (const url of [
        `http://127.0.0.1:${apiPort}/healthz`,
        `http://127.0.0.1:${edgePort}/healthz`,
        `http://127.0.0.1:${redirector.port}/to-api`,
        `http://127.0.0.1:${redirector.port}/to-edge`,
      ]) {
        const reply = await post(`/v1/datasets?${id.scope}`, { url });
        assert.equal(reply.status, 400, `${url}: ${JSON.stringify(reply.body)}`);
        assert.deepEqual(reply.body, refused.body, url);
      }
      const ok = await post(`/v1/datasets?${id.scope}`, { url: `http://127.0.0.1:${redirector.port}/data` });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
    } finally {
      await redirector.close();
    }
  });

  it("an allow entry with a port opens that port only", async () => {
    const allowed = await sink((_q, r) => r.end(chatJsonl(2)));
    const other = await sink((_q, r) => r.end(chatJsonl(2)));
    const portOnly = await serverFor(backend, ["--dataset-url-allow", `127.0.0.1:${allowed.port}`]);
    try {
      const who = await newIdentity(portOnly.apiUrl);
      const importUrl = (url: string) =>
        call(portOnly.apiUrl, "POST", `/v1/datasets?${who.scope}`, { token: who.token, json: { url } });
      const ok = await importUrl(`http://127.0.0.1:${allowed.port}/data.jsonl`);
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      const refused = await importUrl(`http://127.0.0.1:${other.port}/data.jsonl`);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "dataset_fetch_failed");
      assert.deepEqual(other.urls, []);
      assert.deepEqual(allowed.urls, ["/data.jsonl"]);
    } finally {
      await portOnly.cleanup();
      await allowed.close();
      await other.close();
    }
  });

  it("a PATCH that changes nothing leaves updatedAt as it was", async () => {
    const { deployment } = await deploymentWithKey(server.apiUrl, id, slug("patch"));
    const path = `/v1/endpoints/${deployment.id}`;
    const get = async () => (await call(server.apiUrl, "GET", path, { token: id.token })).body.deployment;
    const before = await get();
    for (const json of [{}, { enabled: true }, { authMode: "fixed_api_key", runRetentionMode: "days" }]) {
      await new Promise((r) => setTimeout(r, 5));
      const reply = await call(server.apiUrl, "PATCH", path, { token: id.token, json });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.deployment.updatedAt, before.updatedAt, JSON.stringify(json));
      assert.deepEqual(await get(), before, JSON.stringify(json));
    }
    await new Promise((r) => setTimeout(r, 5));
    const changed = await call(server.apiUrl, "PATCH", path, { token: id.token, json: { enabled: false } });
    assert.equal(changed.body.deployment.enabled, false);
    assert.ok(changed.body.deployment.updatedAt > before.updatedAt, JSON.stringify(changed.body));
  });

  it("judges integers past 2^53 by the range, not as 'not an integer'", async () => {
    const create = (runRetentionDays: number) =>
      post(`/v1/endpoints?${id.scope}`, {
        slug: slug("ret"),
        target: { kind: "base_model", baseModel: TINY_MODEL },
        runRetentionDays,
      });
    for (const [days, message] of [
      [2 ** 53, "must be at most 3650"],
      [2 ** 53 + 2, "must be at most 3650"],
      [1e300, "must be at most 3650"],
      [3651, "must be at most 3650"],
      [-(2 ** 53), "must be at least 1"],
      [0, "must be at least 1"],
      [1.5, "must be an integer"],
    ] as const) {
      const reply = await create(days);
      assert.equal(reply.status, 400, `${days}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.message, `"runRetentionDays" ${message}`, String(days));
    }
  });

  it("reads Last-Event-ID only in its plain decimal form", async () => {
    const job = await createJob(server.apiUrl, id, datasetId, {}, { dryRun: true });
    const events = (lastEventId: string) =>
      call(server.apiUrl, "GET", `/v1/jobs/${job.id}/events?lastEventId=${encodeURIComponent(lastEventId)}`, {
        token: id.token,
      });
    for (const raw of ["-0", "+1", " 1", "1 ", "01", "00", "1e0", "0x1", "1.0", "-1", "2147483648"]) {
      const reply = await events(raw);
      assert.equal(reply.status, 400, `${JSON.stringify(raw)}: ${reply.status}`);
      assert.match(reply.body.error.message, /^"Last-Event-ID" must be an event id/, raw);
    }
  });
}

describe("hostile inputs (issue 42) on SQLite", () => hostileInputTests("sqlite"));
describe("hostile inputs (issue 42) on PostgreSQL", () => hostileInputTests("postgres"));
