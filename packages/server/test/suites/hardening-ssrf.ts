// Probes of issue 14, finding 2: a dataset URL cannot reach inside the
// server's network. A strict server (no allowed hosts) refuses loopback,
// private and metadata addresses before connecting; the shared server allows
// 127.0.0.1, so redirects, the token and error contents are checked there.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, it } from "node:test";
import {
  type Backend,
  call,
  chatJsonl,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
} from "../harness.js";

/** A loopback HTTP server that records every connection and request it gets. */
async function sink(handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, r) => r.end()) {
  const requests: { url: string; authorization: string | undefined }[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    requests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    handler(req, res);
  });
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    requests,
    connections: () => connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const importUrl = (api: string, id: Identity, url: string, token?: string) =>
  call(api, "POST", `/v1/datasets?${id.scope}`, {
    token: id.token,
    json: { url, ...(token ? { token } : {}) },
  });

export function ssrfTests(backend: Backend, shared: () => ServerProcess) {
  let strict: Awaited<ReturnType<typeof serverFor>>;
  before(async () => {
    strict = await serverFor(backend);
  });
  after(async () => {
    await strict?.cleanup();
  });

  it("refuses loopback URLs in every spelling without the loopback server receiving a request", async () => {
    const id = await newIdentity(strict.apiUrl);
    const target = await sink((_q, r) => r.end(chatJsonl(2)));
    const p = target.port;
    try {
      const urls = [
        `http://127.0.0.1:${p}/data.jsonl`,
        `http://localhost:${p}/data.jsonl`,
        `http://127.1:${p}/data.jsonl`,
        `http://2130706433:${p}/data.jsonl`,
        `http://0x7f.0.0.1:${p}/data.jsonl`,
        `http://0.0.0.0:${p}/data.jsonl`,
        `http://[::1]:${p}/data.jsonl`,
        `http://[::]:${p}/data.jsonl`,
        `http://[::ffff:127.0.0.1]:${p}/data.jsonl`,
        `http://[0:0:0:0:0:ffff:7f00:1]:${p}/data.jsonl`,
        `https://127.0.0.1:${p}/data.jsonl`,
      ];
      const messages = new Set<string>();
      for (const url of urls) {
        const reply = await importUrl(strict.apiUrl, id, url, "tenant-secret");
        assert.equal(reply.status, 400, `${url}: ${JSON.stringify(reply.body)}`);
        assert.equal(reply.body.error.code, "dataset_fetch_failed", url);
        messages.add(reply.body.error.message);
      }
      assert.equal(messages.size, 1, [...messages].join("\n"));
      assert.equal(target.connections(), 0);
      assert.deepEqual(target.requests, []);
      const list = await call(strict.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token });
      assert.deepEqual(list.body.datasets, []);
    } finally {
      await target.close();
    }
  });

  it("refuses private, link-local, CGNAT, unique-local and cloud metadata addresses alike", async () => {
    const id = await newIdentity(strict.apiUrl);
    const closed = await importUrl(strict.apiUrl, id, `http://127.0.0.1:${await closedPort()}/x`);
    for (const host of [
      "169.254.169.254",
      "[fd00:ec2::254]",
      "[::ffff:169.254.169.254]",
      "[64:ff9b::a9fe:a9fe]",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "100.64.0.1",
      "100.100.100.200",
      "[fe80::1]",
      "[fc00::1]",
      "224.0.0.1",
      "255.255.255.255",
    ]) {
      const reply = await importUrl(strict.apiUrl, id, `http://${host}/latest/meta-data/`);
      assert.equal(reply.status, closed.status, host);
      assert.deepEqual(reply.body, closed.body, host);
    }
    for (const url of ["file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1:70/", "data:,x"]) {
      const reply = await importUrl(strict.apiUrl, id, url);
      assert.equal(reply.status, 400, url);
      assert.match(reply.body.error.message, /"url" must be an http\(s\) URL/, url);
    }
  });

  it("an allowed host gets through, and its closed port reads exactly like a refused address", async () => {
    const id = await newIdentity(shared().apiUrl);
    const refused = await importUrl(shared().apiUrl, id, "http://10.1.2.3/data.jsonl");
    const closed = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${await closedPort()}/data.jsonl`);
    assert.equal(refused.status, 400);
    assert.equal(closed.status, refused.status);
    assert.deepEqual(closed.body, refused.body);
    const source = await sink((_q, r) => r.end(chatJsonl(3)));
    try {
      const ok = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${source.port}/ok.jsonl`);
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal(ok.body.dataset.rows, 3);
      // Allowing 127.0.0.1 does not allow the other names of loopback.
      const other = await importUrl(shared().apiUrl, id, `http://localhost:${source.port}/ok.jsonl`);
      assert.deepEqual(other.body, refused.body);
      assert.equal(source.requests.length, 1);
    } finally {
      await source.close();
    }
  });

  it("checks every redirect hop, keeps the token on its origin and bounds the hops", async () => {
    const id = await newIdentity(shared().apiUrl);
    const second = await sink((_q, r) => r.end(chatJsonl(2)));
    const first = await sink((req, res) => {
      const go = (location: string) => res.writeHead(302, { location }).end();
      if (req.url === "/to-localhost") go(`http://localhost:${second.port}/data.jsonl`);
      else if (req.url === "/to-mapped") go(`http://[::ffff:7f00:1]:${second.port}/data.jsonl`);
      else if (req.url === "/to-metadata") go("http://169.254.169.254/latest/meta-data/");
      else if (req.url === "/to-file") go("file:///etc/passwd");
      else if (req.url === "/to-other-port") go(`http://127.0.0.1:${second.port}/data.jsonl`);
      else if (req.url === "/same-origin") go("/data.jsonl");
      else if (req.url === "/loop") go("/loop");
      else res.end(chatJsonl(4));
    });
    try {
      const refused = await importUrl(shared().apiUrl, id, "http://10.1.2.3/");
      for (const path of ["/to-localhost", "/to-mapped", "/to-metadata", "/to-file"]) {
        const reply = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${first.port}${path}`, "t0k");
        assert.deepEqual(reply.body, refused.body, path);
      }
      assert.equal(second.connections(), 0);

      const moved = await importUrl(
        shared().apiUrl,
        id,
        `http://127.0.0.1:${first.port}/to-other-port`,
        "t0k",
      );
      assert.equal(moved.status, 201, JSON.stringify(moved.body));
      assert.deepEqual(second.requests, [{ url: "/data.jsonl", authorization: undefined }]);

      first.requests.length = 0;
      const same = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${first.port}/same-origin`, "t0k");
      assert.equal(same.status, 201, JSON.stringify(same.body));
      assert.deepEqual(
        first.requests.map((r) => r.authorization),
        ["Bearer t0k", "Bearer t0k"],
      );

      first.requests.length = 0;
      const loop = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${first.port}/loop`);
      assert.equal(loop.status, 400);
      assert.equal(loop.body.error.code, "dataset_fetch_failed");
      assert.match(loop.body.error.message, /more than 5 redirects/);
      assert.equal(first.requests.length, 6);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("never quotes what the fetched host sent", async () => {
    const id = await newIdentity(shared().apiUrl);
    const marker = "SECRET-7f3a";
    const source = await sink((req, res) => {
      if (req.url === "/passwd") res.end(`root:x:0:0:${marker}:/root:/bin/bash\n`);
      else if (req.url === "/row") res.end(`{"messages":[{"role":"${marker}","content":"x"}]}\n`);
      else if (req.url === "/latin1") res.end(Buffer.from(`{"messages":"${marker}\xff"}\n`, "latin1"));
      else res.writeHead(500).end(marker);
    });
    try {
      for (const path of ["/passwd", "/row", "/latin1", "/error"]) {
        const reply = await importUrl(shared().apiUrl, id, `http://127.0.0.1:${source.port}${path}`);
        assert.equal(reply.status, 400, path);
        assert.ok(!JSON.stringify(reply.body).includes(marker), `${path}: ${JSON.stringify(reply.body)}`);
        assert.ok(!JSON.stringify(reply.body).includes("root"), path);
      }
    } finally {
      await source.close();
    }
  });
}
