// Every Studio security rule, checked against a real `svc dev` process: Host
// guard, per-launch token (header; query only on the event stream), no CORS,
// loopback only, port selection.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { networkInterfaces } from "node:os";
import { after, before, describe, test } from "node:test";
import { runSvc } from "../cli/harness.js";
import {
  DEAD_CLOUD_API,
  makeProject,
  type RawResponse,
  rawRequest,
  type StudioProcess,
  startStudio,
} from "./studio-process.js";

const noCorsHeaders = (r: RawResponse) =>
  assert.deepEqual(
    Object.keys(r.headers).filter((h) => h.startsWith("access-control-")),
    [],
    "no Access-Control-* header",
  );

describe("svc dev security", () => {
  let studio: StudioProcess;
  before(async () => {
    const project = await makeProject();
    studio = await startStudio({ ...project, env: { SVC_CLOUD_API_URL: DEAD_CLOUD_API } });
  });
  after(async () => {
    await studio?.stop();
  });

  test("index.html carries a 32-byte base64url token in <meta name=svc-studio-token>", async () => {
    const r = await rawRequest(studio.port, { path: "/" });
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /text\/html/);
    assert.match(studio.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(studio.token, "base64url").length, 32);
    assert.equal(r.headers["cache-control"], "no-store");
  });

  test("Host guard: 127.0.0.1 and localhost (with or without port) pass; anything else is 403 with no HTML", async () => {
    for (const host of ["127.0.0.1", `127.0.0.1:${studio.port}`, "localhost", `localhost:${studio.port}`]) {
      const r = await rawRequest(studio.port, { path: "/", headers: { Host: host } });
      assert.equal(r.status, 200, host);
    }
    for (const host of [
      "evil.example",
      "localhost.evil.example",
      "127.0.0.1.nip.io",
      "[::1]",
      "0.0.0.0",
      "studio.localhost",
    ]) {
      const r = await rawRequest(studio.port, { path: "/", headers: { Host: host } });
      assert.equal(r.status, 403, host);
      assert.ok(!r.body.includes(studio.token), `${host}: token leaked`);
      assert.ok(!r.body.includes("<meta"), `${host}: HTML served`);
      const api = await rawRequest(studio.port, {
        path: "/api/manifest",
        headers: { Host: host, "X-Svc-Studio-Token": studio.token },
      });
      assert.equal(api.status, 403, `${host} /api`);
      const asset = await rawRequest(studio.port, { path: "/assets/x.js", headers: { Host: host } });
      assert.equal(asset.status, 403, `${host} asset`);
    }
  });

  test("an absolute-form request target must name a loopback authority too, whatever its Host", async () => {
    for (const target of [
      "http://evil.com/api/models",
      "http://evil.com/",
      `http://localhost.evil.example:${studio.port}/api/manifest`,
      "https://127.0.0.1.nip.io/",
    ]) {
      const r = await rawRequest(studio.port, {
        path: target,
        headers: { Host: "localhost", "X-Svc-Studio-Token": studio.token },
      });
      assert.equal(r.status, 403, target);
      assert.ok(!r.body.includes(studio.token), `${target}: token leaked`);
    }
    for (const target of [`http://127.0.0.1:${studio.port}/`, `http://localhost:${studio.port}/`]) {
      const r = await rawRequest(studio.port, { path: target, headers: { Host: "localhost" } });
      assert.equal(r.status, 200, target);
    }
  });

  test("assets are served from the web app build only (no path traversal)", async () => {
    const html = (await rawRequest(studio.port, { path: "/" })).body;
    const script = html.match(/src="(\/assets\/[^"]+\.js)"/)?.[1];
    assert.ok(script, "index.html names its script");
    const asset = await rawRequest(studio.port, { path: script });
    assert.equal(asset.status, 200);
    assert.match(String(asset.headers["content-type"]), /javascript/);
    for (const path of [
      "/assets/..%2f..%2f..%2fpackage.json",
      "/assets/%2e%2e/%2e%2e/index.html",
      "/assets/%E0%A4%A",
    ]) {
      const r = await rawRequest(studio.port, { path });
      assert.equal(r.status, 404, path);
      assert.ok(!r.body.includes('"name"'), path);
    }
  });

  test("every /api route needs X-Svc-Studio-Token: missing or wrong is 403", async () => {
    const routes: [string, string][] = [
      ["GET", "/api/manifest"],
      ["GET", "/api/jobs"],
      ["GET", "/api/credentials"],
      ["GET", "/api/models"],
      ["POST", "/api/models/pull"],
      ["GET", "/api/models/pull/abc"],
      ["GET", "/api/deployments"],
      ["POST", "/api/deployments"],
      ["GET", "/api/deployments/abc"],
      ["PATCH", "/api/deployments/abc"],
      ["DELETE", "/api/deployments/abc"],
      ["POST", "/api/deployments/abc/keys"],
      ["DELETE", "/api/deployments/abc/keys/k"],
      ["GET", "/api/project-keys"],
      ["POST", "/api/project-keys"],
      ["DELETE", "/api/project-keys/k"],
      ["POST", "/api/train"],
      ["POST", "/api/jobs/abc/cancel"],
      ["GET", "/api/jobs/abc/events"],
      ["POST", "/api/inference/chat"],
      ["GET", "/api/no-such-route"],
    ];
    const wrong = `${studio.token.slice(0, -1)}${studio.token.endsWith("A") ? "B" : "A"}`;
    for (const [method, path] of routes) {
      const headerSets: Record<string, string>[] = [
        {},
        { "X-Svc-Studio-Token": wrong },
        { "X-Svc-Studio-Token": "short" },
      ];
      for (const headers of headerSets) {
        const r = await rawRequest(studio.port, {
          method,
          path,
          headers,
          body: method === "GET" ? undefined : "{}",
        });
        assert.equal(r.status, 403, `${method} ${path} ${JSON.stringify(headers)}`);
        assert.deepEqual(Object.keys(JSON.parse(r.body).error).sort(), ["code", "message"]);
      }
    }
  });

  test("query token: accepted on the job-event stream only, never on other routes or mutations", async () => {
    const q = `studioToken=${encodeURIComponent(studio.token)}`;
    const events = await rawRequest(studio.port, { path: `/api/jobs/abc/events?${q}` });
    assert.notEqual(events.status, 403, "events route accepts ?studioToken=");
    assert.equal(events.status, 404, "no .svc/state.json: job not found");
    for (const [method, path] of [
      ["GET", "/api/jobs"],
      ["GET", "/api/manifest"],
      ["POST", "/api/train"],
      ["POST", "/api/deployments"],
      ["PATCH", "/api/deployments/abc"],
      ["DELETE", "/api/deployments/abc/keys/k"],
      ["POST", "/api/jobs/abc/cancel"],
      ["POST", "/api/inference/chat"],
      ["POST", "/api/jobs/abc/events"],
    ]) {
      const r = await rawRequest(studio.port, {
        method,
        path: `${path}?${q}`,
        body: method === "GET" ? undefined : "{}",
      });
      assert.equal(r.status, 403, `${method} ${path} with query token`);
    }
  });

  test("no CORS: preflights and cross-origin requests get no Access-Control-* headers", async () => {
    const origin = { Origin: "http://evil.example" };
    const preflight = await rawRequest(studio.port, {
      method: "OPTIONS",
      path: "/api/deployments",
      headers: {
        ...origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-svc-studio-token",
      },
    });
    assert.equal(preflight.status, 403);
    noCorsHeaders(preflight);
    noCorsHeaders(await rawRequest(studio.port, { method: "OPTIONS", path: "/", headers: origin }));
    noCorsHeaders(await rawRequest(studio.port, { path: "/", headers: origin }));
    const ok = await rawRequest(studio.port, {
      path: "/api/deployments",
      headers: { ...origin, "X-Svc-Studio-Token": studio.token },
    });
    noCorsHeaders(ok);
  });

  test("a cross-origin simple POST (text/plain form body) is rejected by the token check", async () => {
    const r = await rawRequest(studio.port, {
      method: "POST",
      path: "/api/train",
      headers: { Origin: "http://evil.example", "Content-Type": "text/plain" },
      body: "x=1",
    });
    assert.equal(r.status, 403);
    noCorsHeaders(r);
  });

  test("a mutation with a valid token from another origin is refused by the Origin / Sec-Fetch-Site check", async () => {
    const post = (headers: Record<string, string>) =>
      rawRequest(studio.port, {
        method: "POST",
        path: "/api/jobs/abc/cancel",
        headers: { "X-Svc-Studio-Token": studio.token, "Content-Type": "application/json", ...headers },
        body: "{}",
      });
    const crossOrigin: Record<string, string>[] = [
      { Origin: "http://evil.example" },
      { Origin: `http://localhost:${studio.port + 1}` },
      { Origin: "null" },
      { "Sec-Fetch-Site": "cross-site" },
      { "Sec-Fetch-Site": "same-site" },
      { Origin: `http://127.0.0.1:${studio.port}`, "Sec-Fetch-Site": "cross-site" },
    ];
    for (const headers of crossOrigin) {
      const r = await post(headers);
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.equal(JSON.parse(r.body).error.code, "cross_origin_request", JSON.stringify(headers));
      noCorsHeaders(r);
    }
    const pull = await rawRequest(studio.port, {
      method: "POST",
      path: "/api/models/pull",
      headers: { "X-Svc-Studio-Token": studio.token, "Content-Type": "application/json", ...crossOrigin[0] },
      body: JSON.stringify({ model: "org/model" }),
    });
    assert.equal(pull.status, 403);
    assert.equal(JSON.parse(pull.body).error.code, "cross_origin_request");
    // Studio's own page (and clients that send neither header) pass on to the route.
    const ownPage: Record<string, string>[] = [
      { Origin: `http://127.0.0.1:${studio.port}`, "Sec-Fetch-Site": "same-origin" },
      { Host: `localhost:${studio.port}`, Origin: `http://localhost:${studio.port}` },
      {},
    ];
    for (const headers of ownPage) {
      const r = await post(headers);
      assert.notEqual(r.status, 403, `${JSON.stringify(headers)}: ${r.body}`);
    }
    // Reads are not mutations: a cross-site GET with the token is answered (no CORS header lets a page read it).
    const read = await rawRequest(studio.port, {
      path: "/api/deployments",
      headers: { "X-Svc-Studio-Token": studio.token, "Sec-Fetch-Site": "cross-site" },
    });
    assert.equal(read.status, 200);
  });

  test("with no .svc/state.json the deployment and job lists are empty and no upstream call is made", async () => {
    // The cloud API URL is a closed port: any upstream call would fail with 502.
    for (const [path, key] of [
      ["/api/deployments", "deployments"],
      ["/api/jobs", "jobs"],
    ]) {
      const r = await rawRequest(studio.port, { path, headers: { "X-Svc-Studio-Token": studio.token } });
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(JSON.parse(r.body), { [key]: [] });
    }
  });

  test("an unreachable cloud API is a 502 in the uniform error body", async () => {
    const r = await rawRequest(studio.port, {
      path: "/api/models",
      headers: { "X-Svc-Studio-Token": studio.token },
    });
    assert.equal(r.status, 502);
    const body = JSON.parse(r.body);
    assert.equal(typeof body.error.message, "string");
    assert.equal(typeof body.error.code, "string");
  });

  test("listens on loopback only", async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal);
    if (!external) return;
    await assert.rejects(
      fetch(`http://${external.address}:${studio.port}/`),
      "not reachable on a non-loopback address",
    );
  });
});

describe("svc dev launches", () => {
  test("the token rotates at every launch; a stale tab's token gets 403", async () => {
    const project = await makeProject();
    const env = { SVC_CLOUD_API_URL: DEAD_CLOUD_API };
    const first = await startStudio({ ...project, env });
    const staleToken = first.token;
    assert.equal(await first.stop(), 0, "SIGINT stops svc dev cleanly");
    const second = await startStudio({ ...project, env });
    try {
      assert.notEqual(second.token, staleToken);
      const stale = await rawRequest(second.port, {
        path: "/api/jobs",
        headers: { "X-Svc-Studio-Token": staleToken },
      });
      assert.equal(stale.status, 403);
      const fresh = await rawRequest(second.port, {
        path: "/api/jobs",
        headers: { "X-Svc-Studio-Token": second.token },
      });
      assert.equal(fresh.status, 200);
    } finally {
      await second.stop();
    }
  });

  test("an explicit busy --port fails with a clear message", async () => {
    const blocker = await listenOn(0);
    const port = (blocker.address() as { port: number }).port;
    try {
      const project = await makeProject();
      const { code, stderr } = await runSvc(["dev", "--port", String(port)], {
        cwd: project.projectDir,
        env: { ...process.env, HOME: project.home, SVC_CLOUD_API_URL: DEAD_CLOUD_API },
      });
      assert.equal(code, 1);
      assert.match(stderr, new RegExp(`port ${port} is already in use; choose another with --port`));
    } finally {
      blocker.close();
    }
  });

  test("without --port, a busy 4000 moves Studio to the next free port", async () => {
    const blocker = await listenOn(4000).catch(() => null); // already busy is fine too
    const project = await makeProject();
    const s = await startStudio({ ...project, args: [], env: { SVC_CLOUD_API_URL: DEAD_CLOUD_API } });
    try {
      assert.ok(s.port > 4000 && s.port < 4020, `port ${s.port}`);
      assert.equal((await rawRequest(s.port, { path: "/" })).status, 200);
    } finally {
      await s.stop();
      blocker?.close();
    }
  });

  test("bad --port values are refused", async () => {
    const project = await makeProject();
    const { code, stderr } = await runSvc(["dev", "--port", "70000"], {
      cwd: project.projectDir,
      env: { ...process.env, HOME: project.home, SVC_CLOUD_API_URL: DEAD_CLOUD_API },
    });
    assert.notEqual(code, 0);
    assert.match(stderr, /--port/);
  });
});

function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(port, "127.0.0.1", () => resolve(s));
  });
}
