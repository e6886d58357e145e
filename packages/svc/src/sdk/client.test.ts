// CloudApiClient's table methods (one generic call per @svc/wire ROUTES entry)
// against a real HTTP server on loopback that records what arrives: each
// method exists, fills its path ids in order (encoded), sends a POST's body
// ({} without one) and a GET's query, adds the scope only where the table says,
// and returns the unwrapped field (nothing for a 204).
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { ROUTES, type RouteName } from "@svc/wire";
import { CloudApiClient } from "./client.js";
import { HAND_WRITTEN_ROUTES } from "./cloud-api.js";

interface Seen {
  method: string;
  url: string;
  body: string;
}
let seen: Seen[] = [];
let answer: { status: number; body?: unknown } = { status: 200, body: {} };
const server = createServer(async (req: IncomingMessage, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  seen.push({ method: req.method ?? "", url: req.url ?? "", body });
  res.writeHead(answer.status, { "Content-Type": "application/json" });
  res.end(answer.body === undefined ? undefined : JSON.stringify(answer.body));
});
let client: CloudApiClient;
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  client = new CloudApiClient({
    baseUrl: `http://127.0.0.1:${port}`,
    token: "t",
    scope: { orgSlug: "o", projectSlug: "p" },
  });
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function next(status: number, body?: unknown) {
  seen = [];
  answer = { status, body };
}

test("every route of the table that is not written by hand is a method of the client", () => {
  const handWritten: readonly string[] = HAND_WRITTEN_ROUTES;
  const missing = (Object.keys(ROUTES) as RouteName[]).filter(
    (name) =>
      !handWritten.includes(name) &&
      typeof (client as unknown as Record<string, unknown>)[name] !== "function",
  );
  assert.deepEqual(missing, []);
  for (const name of HAND_WRITTEN_ROUTES) assert.ok(name in ROUTES, `${name} is a table route`);
});

test("a table method fills the path, sends body or query, scopes as the table says, and unwraps", async () => {
  next(200, { job: { id: "j/1" } });
  assert.deepEqual(await client.getJob("j/1"), { id: "j/1" });
  assert.deepEqual(seen, [{ method: "GET", url: "/v1/jobs/j%2F1?orgSlug=o&projectSlug=p", body: "" }]);

  next(200, { job: { id: "j" } });
  await client.cancelJob("j");
  assert.deepEqual(seen, [{ method: "POST", url: "/v1/jobs/j/cancel?orgSlug=o&projectSlug=p", body: "{}" }]);

  next(200, { deployment: { id: "d" } });
  await client.updateDeployment("d", { enabled: false });
  assert.deepEqual(seen, [
    { method: "PATCH", url: "/v1/endpoints/d?orgSlug=o&projectSlug=p", body: '{"enabled":false}' },
  ]);

  next(200, { usage: { keyId: "k" } });
  await client.getDeploymentKeyUsage("d", "k", { days: 3 });
  assert.equal(seen[0].url, "/v1/endpoints/d/keys/k/usage?days=3&orgSlug=o&projectSlug=p");

  // an unscoped route sends no scope; a query left out sends none
  next(200, { profile: { status: "pending" } });
  await client.getDatasetProfile("ds", { baseModel: "svc/pico-llama" });
  assert.equal(seen[0].url, "/v1/datasets/ds/profile?baseModel=svc%2Fpico-llama");

  next(204);
  assert.equal(await client.deleteDeployment("d"), undefined);
  assert.equal(seen[0].method, "DELETE");

  // call() is the same generic call by the route's name
  next(200, { models: [] });
  assert.deepEqual(await client.call("listModels"), []);
  assert.deepEqual(seen, [{ method: "GET", url: "/v1/models", body: "" }]);
});

test("a refusal is a CloudApiError with the server's status and code", async () => {
  next(404, { error: { message: "no job j", code: "not_found" } });
  await assert.rejects(client.getJob("j"), { name: "CloudApiError", status: 404, code: "not_found" });
});
