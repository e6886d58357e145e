// The dataset fetcher against a DNS answer that changes between the check and
// the connect (rebinding), with real loopback HTTP servers: the name answers
// 127.0.0.1 (the "public" address of this test's network) to the first lookup
// and 127.0.0.2 (the "private" one) to every later lookup. With the checked
// address pinned, the connection reaches 127.0.0.1; a fetcher that looked the
// name up again to connect would reach 127.0.0.2, and an unpinned one using
// the system resolver would not find the name at all. Also: allow entries
// with a port, and the server's own ports.
import assert from "node:assert/strict";
import type { LookupAddress } from "node:dns";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { ApiError } from "./api-error.js";
import { type DatasetUrlNetwork, fetchDatasetUrl, parseAllowedHosts } from "./dataset-url.js";

interface Listener {
  server: Server;
  requests: string[];
}

async function listen(host: string, port: number, body: string): Promise<Listener> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.headers.host} ${req.url}`);
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return { server, requests };
}

const close = (l: Listener | undefined) => new Promise<void>((r) => (l ? l.server.close(() => r()) : r()));

/** A resolver whose first answer for the name is `first` and every later one `then`. */
function rebinding(name: string, first: string, then: string) {
  const asked: string[] = [];
  const lookup = async (host: string): Promise<LookupAddress[]> => {
    asked.push(host);
    if (host !== name) throw new Error(`ENOTFOUND ${host}`);
    return [{ address: asked.length === 1 ? first : then, family: 4 }];
  };
  return { lookup, asked };
}

describe("dataset URLs: DNS rebinding between the check and the connect", () => {
  let good: Listener;
  let evil: Listener;
  let port: number;
  before(async () => {
    // The same port on two loopback addresses; the kernel picks a free one for the first.
    for (let attempt = 0; ; attempt++) {
      evil = await listen("127.0.0.2", 0, "EVIL\n");
      port = (evil.server.address() as AddressInfo).port;
      try {
        good = await listen("127.0.0.1", port, '{"ok":true}\n');
        break;
      } catch (error) {
        await close(evil);
        if (attempt === 20) throw error;
      }
    }
  });
  after(async () => {
    await close(good);
    await close(evil);
  });

  it("connects to the address it checked, though DNS now answers a private one", async () => {
    const dns = rebinding("rebind.test", "127.0.0.1", "127.0.0.2");
    const network: DatasetUrlNetwork = {
      lookup: dns.lookup,
      // This test's network: 127.0.0.1 stands for a public address, everything else is private.
      isPublicAddress: (address) => address === "127.0.0.1",
    };
    const bytes = await fetchDatasetUrl(new URL(`http://rebind.test:${port}/data.jsonl`), undefined, {
      limit: 1024,
      allowedHosts: [],
      network,
    });
    assert.equal(bytes.toString(), '{"ok":true}\n');
    assert.deepEqual(good.requests, [`rebind.test:${port} /data.jsonl`]);
    assert.deepEqual(evil.requests, []);
    assert.deepEqual(dns.asked, ["rebind.test"], "the name is looked up once, for the check");

    // The same resolver, asked once more, gives the private address: refused before any connection.
    await assert.rejects(
      fetchDatasetUrl(new URL(`http://rebind.test:${port}/again.jsonl`), undefined, {
        limit: 1024,
        allowedHosts: [],
        network,
      }),
      (error: unknown) => error instanceof ApiError && error.code === "dataset_fetch_failed",
    );
    assert.deepEqual(evil.requests, []);
  });

  it("pins an allowed host's address too", async () => {
    good.requests.length = 0;
    const dns = rebinding("allowed.test", "127.0.0.1", "127.0.0.2");
    const bytes = await fetchDatasetUrl(new URL(`http://allowed.test:${port}/d.jsonl`), undefined, {
      limit: 1024,
      allowedHosts: parseAllowedHosts([`allowed.test:${port}`]),
      network: { lookup: dns.lookup, isPublicAddress: () => false },
    });
    assert.equal(bytes.toString(), '{"ok":true}\n');
    assert.deepEqual(good.requests, [`allowed.test:${port} /d.jsonl`]);
    assert.deepEqual(evil.requests, []);
  });

  it("never connects to the server's own ports on a local address, allowed or not", async () => {
    good.requests.length = 0;
    for (const host of ["127.0.0.1", "localhost", "[::1]"]) {
      await assert.rejects(
        fetchDatasetUrl(new URL(`http://${host}:${port}/own`), undefined, {
          limit: 1024,
          allowedHosts: parseAllowedHosts(["127.0.0.1", "localhost", "::1"]),
          ownPorts: [port],
        }),
        (error: unknown) => error instanceof ApiError && error.code === "dataset_fetch_failed",
        host,
      );
    }
    assert.deepEqual(good.requests, []);
  });
});

it("allow entries are a host, or a host and a port, as URLs write them", () => {
  assert.deepEqual(
    parseAllowedHosts(["Data.Example.com, 127.0.0.1:8080", "::1", "", "[fd00::1]", "[fd00::2]:443", "h:80"]),
    ["data.example.com", "127.0.0.1:8080", "::1", "fd00::1", "[fd00::2]:443", "h:80"],
  );
  for (const bad of ["host:0", "host:65536", "host:", "host:8x", "a/b", "user@host"]) {
    assert.throws(() => parseAllowedHosts([bad]), /--dataset-url-allow: /, bad);
  }
});
