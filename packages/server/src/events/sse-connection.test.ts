// SseConnection on a real HTTP server and a real client socket that never reads.
import assert from "node:assert/strict";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { test } from "node:test";
import { SseConnection } from "./sse-connection.js";

/** A server whose one response is handed to `use`, and a client that sends the request and never reads. */
async function nonReadingClient(): Promise<{ res: ServerResponse; closed: Promise<void>; stop(): void }> {
  let resolveRes: (res: ServerResponse) => void = () => {};
  const responded = new Promise<ServerResponse>((resolve) => {
    resolveRes = resolve;
  });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.flushHeaders();
    resolveRes(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
  socket.pause();
  socket.on("error", () => {});
  socket.write("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
  const res = await responded;
  const closed = new Promise<void>((resolve) => res.on("close", () => resolve()));
  return {
    res,
    closed,
    stop() {
      socket.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MIB = new Uint8Array(1024 * 1024).fill(0x61);

test("live pushes to a client that stopped reading disconnect it once its unsent bytes pass the limit", async () => {
  const client = await nonReadingClient();
  const connection = new SseConnection(client.res, { bufferBytes: 256 * 1024, keepAliveMs: 60_000 });
  try {
    // The kernel's socket buffers take the first megabytes; after them Node buffers, up to the limit.
    let pushed = 0;
    while (!connection.closed && pushed < 512) {
      connection.push(MIB);
      pushed++;
    }
    assert.ok(connection.closed, `disconnected after ${pushed} MiB`);
    assert.match(connection.dropped ?? "", /passed the 262144-byte buffer limit/);
    await client.closed;
  } finally {
    client.stop();
  }
});

test("a replay stalled on a client that reads nothing for a whole keep-alive interval is disconnected", async () => {
  const client = await nonReadingClient();
  const connection = new SseConnection(client.res, { bufferBytes: 1 << 30, keepAliveMs: 100 });
  try {
    // Write as a replay does, waiting for room after each refusal, until room no longer comes.
    let drained: Promise<void> = Promise.resolve();
    for (let written = 0; written < 512; written++) {
      if (connection.write(MIB)) continue;
      drained = connection.drained();
      const room = await Promise.race([drained.then(() => true), sleep(50).then(() => false)]);
      if (!room) break;
    }
    assert.equal(connection.dropped, null, "still open while its buffer filled");
    await client.closed;
    await drained; // a waiting replay wakes up when its connection closes
    assert.match(connection.dropped ?? "", /read nothing for 100 ms/);
  } finally {
    client.stop();
  }
});

test("a client that reads gets the writes and keep-alive pings, and is not disconnected", async () => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const connection = new SseConnection(res, { bufferBytes: 64 * 1024, keepAliveMs: 30 });
    connection.write(new TextEncoder().encode("id: 1\nevent: x\ndata: {}\n\n"));
    setTimeout(() => connection.end(), 200);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const text = await response.text();
    assert.match(text, /^id: 1\nevent: x\ndata: \{\}\n\n(: ping\n\n)+$/);
  } finally {
    server.close();
  }
});
