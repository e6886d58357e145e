// Against a real HTTP server on loopback: resume with Last-Event-ID after a drop,
// the idle watchdog, and the statuses that end the stream at once.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { ApiUnreachableError, type StreamRecovery } from "./api-recovery.js";
import { CloudApiClient, CloudApiError } from "./client.js";
import { streamJobEvents } from "./job-event-stream.js";

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  let n = 0;
  const server = createServer((req, res) => handler(req, res, n++));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return new CloudApiClient({
    baseUrl: `http://127.0.0.1:${port}`,
    token: "t",
    scope: { orgSlug: "o", projectSlug: "p" },
  });
}

const frame = (id: number, type: string, extra: object = {}) =>
  `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, jobId: "j1", timestamp: "t", ...extra })}\n\n`;

const fast = { backoff: { baseMs: 5, maxMs: 20 } };

test("a dropped stream resumes after the last event id, without repeats", async () => {
  const seen: (string | undefined)[] = [];
  const client = await serve((req, res, n) => {
    seen.push(req.headers["last-event-id"] as string | undefined);
    assert.equal(req.url, "/v1/jobs/j1/events?orgSlug=o&projectSlug=p");
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (n === 0) {
      res.write(frame(1, "training.started", { totalSteps: 2 }));
      res.write(frame(2, "training.log", { step: 1, loss: 1 }));
      setTimeout(() => res.destroy(), 20);
    } else {
      res.write(": ping\n\n");
      res.write(frame(3, "training.completed", { artifacts: [] }));
      res.end("id: 4\nevent: end\ndata: {}\n\n");
    }
  });
  const reconnects: string[] = [];
  const types: string[] = [];
  for await (const { event } of streamJobEvents({
    client,
    jobId: "j1",
    ...fast,
    onReconnect: (r) => reconnects.push(r.reason),
  })) {
    types.push(event.type);
  }
  assert.deepEqual(types, ["training.started", "training.log", "training.completed"]);
  assert.deepEqual(seen, [undefined, "2"]);
  assert.equal(reconnects.length, 1);
});

test("the idle watchdog reconnects a silent stream", async () => {
  const client = await serve((_req, res, n) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (n === 0)
      res.write(frame(1, "training.started", { totalSteps: 1 })); // then silence
    else res.end(frame(2, "training.cancelled", { step: null }) + "event: end\ndata: {}\n\n");
  });
  const reasons: string[] = [];
  const types: string[] = [];
  for await (const { event } of streamJobEvents({
    client,
    jobId: "j1",
    idleTimeoutMs: 150,
    ...fast,
    onReconnect: (r) => reasons.push(r.reason),
  })) {
    types.push(event.type);
  }
  assert.deepEqual(types, ["training.started", "training.cancelled"]);
  assert.deepEqual(reasons, ["no data for 150 ms"]);
});

for (const status of [401, 403]) {
  test(`HTTP ${status} rejects at once, without retrying`, async () => {
    let calls = 0;
    const client = await serve((_req, res) => {
      calls++;
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { message: "no entry", code: "unauthorized" } }));
    });
    await assert.rejects(
      async () => {
        for await (const _ of streamJobEvents({ client, jobId: "j1", ...fast })) {
        }
      },
      (e: Error) => e instanceof CloudApiError && e.status === status && e.message === "no entry",
    );
    assert.equal(calls, 1);
  });
}

test("server errors are retried with backoff, then give up after giveUpMs with the resume hint", async () => {
  let calls = 0;
  const client = await serve((_req, res) => {
    calls++;
    res.writeHead(503).end();
  });
  const t0 = Date.now();
  await assert.rejects(
    async () => {
      for await (const _ of streamJobEvents({ client, jobId: "j1", giveUpMs: 300, ...fast })) {
      }
    },
    (e: Error) =>
      e instanceof ApiUnreachableError &&
      /^gave up after 1s: the cloud API at http:\/\/127\.0\.0\.1:\d+ does not answer \(.+\)\. Job j1 was not cancelled; follow it again with: svc jobs follow j1$/.test(
        e.message,
      ),
  );
  assert.ok(calls >= 3, `retried (${calls} calls)`);
  assert.ok(Date.now() - t0 < 2000, "gave up on time");
});

test("a recovery that restores the API reconnects at once and hears the outage's end", async () => {
  const client = await serve((_req, res, n) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (n === 0) {
      res.write(frame(5, "training.log", { step: 1, loss: 1 }));
      setTimeout(() => res.destroy(), 20);
    } else res.end(`${frame(6, "training.completed", { artifacts: [] })}event: end\ndata: {}\n\n`);
  });
  const calls: string[] = [];
  const recovery: StreamRecovery = {
    recover: async (reason) => {
      calls.push(`recover: ${reason.length > 0}`);
      return "now";
    },
    waiting: () => calls.push("waiting"),
    connected: (id) => calls.push(`connected ${id}`),
    lastProbe: null,
  };
  const types: string[] = [];
  for await (const { event } of streamJobEvents({
    client,
    jobId: "j1",
    recovery,
    backoff: { baseMs: 60_000 },
  }))
    types.push(event.type);
  assert.deepEqual(types, ["training.log", "training.completed"]);
  assert.deepEqual(calls, ["connected undefined", "recover: true", "connected 5"]);
});

test("aborting stops the local wait with the abort reason", async () => {
  const client = await serve((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write(": ping\n\n");
  });
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("user stopped")), 100);
  await assert.rejects(async () => {
    for await (const _ of streamJobEvents({ client, jobId: "j1", signal: ac.signal, ...fast })) {
    }
  }, /user stopped/);
});
