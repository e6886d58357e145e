// Datasets: JSONL upload and URL import, line-numbered validation, limits, isolation.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { it } from "node:test";
import { call, chatJsonl, newIdentity, type ServerProcess, uploadDataset } from "../harness.js";

/** The shared test server runs with --max-dataset-bytes 65536. */
export const MAX_DATASET_BYTES = 65536;

export function datasetTests(server: () => ServerProcess) {
  const list = async (id: Awaited<ReturnType<typeof newIdentity>>) =>
    (await call(server().apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token })).body.datasets as {
      id: string;
    }[];

  it("stores an uploaded JSONL dataset and counts its rows", async () => {
    const id = await newIdentity(server().apiUrl);
    const dataset = await uploadDataset(server().apiUrl, id, chatJsonl(12));
    assert.equal(dataset.rows, 12);
    const got = await call(server().apiUrl, "GET", `/v1/datasets/${dataset.id}`, { token: id.token });
    assert.equal(got.status, 200);
    assert.equal(got.body.dataset.name, "train.jsonl");
    assert.deepEqual(
      (await list(id)).map((d) => d.id),
      [dataset.id],
    );
  });

  it("rejects a bad JSONL line with its line number and stores nothing", async () => {
    const id = await newIdentity(server().apiUrl);
    const text = `${chatJsonl(2)}{"messages":[{"role":"robot","content":"x"}]}\n`;
    const reply = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}&name=bad.jsonl`, {
      token: id.token,
      body: text,
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.error.code, "invalid_dataset");
    assert.match(reply.body.error.message, /bad\.jsonl line 3: .*role/);
    const broken = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
      token: id.token,
      body: "{oops\n",
    });
    assert.equal(broken.status, 400);
    assert.match(broken.body.error.message, /line 1/);
    const empty = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
      token: id.token,
      body: "",
    });
    assert.equal(empty.status, 400);
    assert.deepEqual(await list(id), []);
  });

  it("refuses a dataset over the size limit with 413 and stores nothing", async () => {
    const id = await newIdentity(server().apiUrl);
    const big = chatJsonl(2000);
    assert.ok(big.length > MAX_DATASET_BYTES);
    const reply = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
      token: id.token,
      body: big,
    });
    assert.equal(reply.status, 413);
    assert.equal(reply.body.error.code, "payload_too_large");
    assert.deepEqual(await list(id), []);
  });

  it("imports a dataset from a URL (with a bearer token) and validates the URL field", async () => {
    const id = await newIdentity(server().apiUrl);
    const seen: string[] = [];
    const source = createServer((req, res) => {
      seen.push(req.headers.authorization ?? "");
      if (req.url === "/data.jsonl") res.end(chatJsonl(5));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => source.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
    try {
      const ok = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
        token: id.token,
        json: { url: `${base}/data.jsonl`, token: "secret" },
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal(ok.body.dataset.rows, 5);
      assert.equal(ok.body.dataset.name, "data.jsonl");
      assert.deepEqual(seen, ["Bearer secret"]);
      const missing = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
        token: id.token,
        json: { url: `${base}/nope` },
      });
      assert.equal(missing.status, 400);
      assert.match(missing.body.error.message, /"url": .* answered HTTP 404/);
      const scheme = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
        token: id.token,
        json: { url: "file:///etc/passwd" },
      });
      assert.equal(scheme.status, 400);
      assert.match(scheme.body.error.message, /"url" must be an http\(s\) URL/);
      const unknown = await call(server().apiUrl, "POST", `/v1/datasets?${id.scope}`, {
        token: id.token,
        json: { url: `${base}/data.jsonl`, extra: 1 },
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.error.message, /"extra" is not a known field/);
      assert.equal((await list(id)).length, 1);
    } finally {
      source.close();
    }
  });

  it("hides another org's datasets (404)", async () => {
    const a = await newIdentity(server().apiUrl);
    const b = await newIdentity(server().apiUrl);
    const dataset = await uploadDataset(server().apiUrl, a);
    assert.equal(
      (await call(server().apiUrl, "GET", `/v1/datasets/${dataset.id}`, { token: b.token })).status,
      404,
    );
    assert.equal(
      (await call(server().apiUrl, "GET", `/v1/datasets?${a.scope}`, { token: b.token })).status,
      404,
    );
    const into = await call(server().apiUrl, "POST", `/v1/datasets?${a.scope}`, {
      token: b.token,
      body: chatJsonl(2),
    });
    assert.equal(into.status, 404);
  });
}
