// svc login against a real OpenID provider (oidc-provider on loopback) and a real
// `svc server --oidc-issuer`: authorization code + PKCE with a loopback redirect,
// tokens stored 0600, whoami, the OAuth missing-state rule, logout.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, SVC_BIN, startTestServer, type TestServer, tempDir } from "./harness.js";
import {
  signInWithBrowserStandIn,
  startTestProvider,
  TEST_CLIENT_ID,
  type TestProvider,
} from "./oidc-test-provider.js";

let provider: TestProvider;
let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;
let byHandProject: string;

before(async () => {
  provider = await startTestProvider();
  home = await tempDir("login-home");
  server = await startTestServer({
    home,
    args: ["--bundled-models", "none", "--oidc-issuer", provider.issuer, "--oidc-audience", TEST_CLIENT_ID],
  });
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
  await provider?.close();
});

/** Runs `svc login`, plays the browser on the URL it prints, and resolves with its result. */
function login(): Promise<{ code: number | null; stdout: string; stderr: string; page: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, "login"], {
      cwd: home,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let page: Promise<string> | null = null;
    child.stdout.on("data", (d) => {
      stdout += d;
      const m = /^ {2}(http\S+)$/m.exec(stdout);
      if (m && !page) page = signInWithBrowserStandIn(m[1]);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", async (code) => {
      try {
        resolve({ code, stdout, stderr, page: page ? await page : "" });
      } catch (err) {
        reject(err);
      }
    });
  });
}

test("whoami exits 1 when signed out", async () => {
  const r = await runSvc(["whoami"], { cwd: home, env });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /not signed in/);
});

test("svc login runs authorization code + PKCE on a loopback redirect and stores the tokens", async () => {
  const r = await login();
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const url = new URL(/^ {2}(http\S+)$/m.exec(r.stdout)![1]);
  assert.equal(url.origin, provider.issuer);
  assert.equal(url.searchParams.get("client_id"), TEST_CLIENT_ID);
  assert.equal(url.searchParams.get("code_challenge_method"), "S256");
  assert.match(url.searchParams.get("redirect_uri")!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  assert.match(r.page, /Signed in to svc/);
  assert.match(r.stdout, /^signed in: oauth · \S+ \(alice@example\.test\)$/m);

  const file = join(home, ".svc", "credentials.json");
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const creds = JSON.parse(await readFile(file, "utf8"));
  assert.equal(creds.mode, "oauth");
  assert.equal(creds.issuer, provider.issuer);
  assert.equal(creds.clientId, TEST_CLIENT_ID);
  assert.equal(creds.accessToken.split(".").length, 3, "a JWT the server verifies with the issuer's JWKS");
  assert.equal(typeof creds.refreshToken, "string");

  const who = await runSvc(["whoami"], { cwd: home, env });
  assert.equal(who.code, 0, who.stderr);
  assert.equal(who.stdout, `oauth · ${creds.orgSlug}\n`);
});

test("with OAuth and no .svc/state.json, scoped calls fail with what to write, and create nothing", async () => {
  const project = await tempDir("oauth-project");
  const r = await runSvc(["deploy", "create", "--slug", "oauth-dep", "--base-model", "svc/pico-llama"], {
    cwd: project,
    env,
  });
  assert.equal(r.code, 1);
  const creds = JSON.parse(await readFile(join(home, ".svc", "credentials.json"), "utf8"));
  assert.match(r.stderr, /\.svc\/state\.json is missing/);
  assert.ok(
    r.stderr.includes(
      `{"orgSlug":"${creds.orgSlug}","projectSlug":"<project slug>","projectId":"<project id>"}`,
    ),
    r.stderr,
  );
  await assert.rejects(stat(join(project, ".svc", "state.json")), /ENOENT/);

  // Written by hand (here: a project made through the API), the state is used as is.
  const res = await fetch(`${server.apiUrl}/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${creds.accessToken}`, "content-type": "application/json" },
    body: JSON.stringify({ orgSlug: creds.orgSlug, slug: "by-hand" }),
  });
  const { project: created } = (await res.json()) as { project: { id: string; slug: string } };
  await mkdir(join(project, ".svc"));
  const state = { orgSlug: creds.orgSlug, projectSlug: created.slug, projectId: created.id };
  await writeFile(join(project, ".svc", "state.json"), JSON.stringify(state));
  const who = await runSvc(["whoami"], { cwd: project, env });
  assert.equal(who.stdout, `oauth · ${creds.orgSlug} / by-hand\n`);
  byHandProject = project;
  const list = await runSvc(["jobs", "list", "--json"], { cwd: project, env });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(JSON.parse(list.stdout), []);
});

test("with OAuth, a .svc/state.json naming a project this account cannot see is an error that says what to write", async () => {
  const project = await tempDir("oauth-stale-project");
  await mkdir(join(project, ".svc"));
  const stale = JSON.stringify({ orgSlug: "anon-gone", projectSlug: "old-project", projectId: "x" });
  await writeFile(join(project, ".svc", "state.json"), stale);
  const r = await runSvc(["deploy", "create", "--slug", "oauth-stale", "--base-model", "svc/pico-llama"], {
    cwd: project,
    env,
  });
  assert.equal(r.code, 1);
  const creds = JSON.parse(await readFile(join(home, ".svc", "credentials.json"), "utf8"));
  const own = JSON.parse(await readFile(join(byHandProject, ".svc", "state.json"), "utf8"));
  const path = join(project, ".svc", "state.json");
  assert.equal(
    r.stderr,
    `svc deploy: ${path} names org "anon-gone" and project "old-project", which the account you are signed in with ` +
      `(OAuth, org "${creds.orgSlug}") cannot see. Signed in with OAuth, svc does not create a project for you: ` +
      `write {"orgSlug":"${creds.orgSlug}","projectSlug":"by-hand","projectId":"${own.projectId}"} to ${path} ` +
      `(your project "by-hand"; GET /v1/projects?orgSlug=${creds.orgSlug} lists the others), ` +
      "or run svc login as an account that can see anon-gone/old-project\n",
  );
  assert.equal(await readFile(path, "utf8"), stale, "the file is left as it was");
});

test("an expired sign-in is refreshed with the refresh token on the next call", async () => {
  const file = join(home, ".svc", "credentials.json");
  const before = JSON.parse(await readFile(file, "utf8"));
  await writeFile(
    file,
    JSON.stringify({ ...before, expiresAt: new Date(Date.now() - 60_000).toISOString() }),
  );
  const r = await runSvc(["deploy", "list", "--json"], { cwd: byHandProject, env });
  assert.equal(r.code, 0, r.stderr);
  const after = JSON.parse(await readFile(file, "utf8"));
  assert.notEqual(after.accessToken, before.accessToken);
  assert.ok(Date.parse(after.expiresAt) > Date.now(), "the new token is valid");
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.equal((await runSvc(["whoami"], { cwd: home, env })).stdout, `oauth · ${before.orgSlug}\n`);
});

test("svc logout forgets the credentials; whoami then exits 1", async () => {
  const out = await runSvc(["logout"], { cwd: home, env });
  assert.equal(out.stdout, "signed out\n");
  await assert.rejects(stat(join(home, ".svc", "credentials.json")), /ENOENT/);
  assert.equal((await runSvc(["whoami"], { cwd: home, env })).code, 1);
});

test("whoami exits 1 when the cloud API cannot be reached", async () => {
  await mkdir(join(home, ".svc"), { recursive: true });
  await writeFile(
    join(home, ".svc", "credentials.json"),
    JSON.stringify({ mode: "anonymous", token: "t", orgSlug: "o", apiUrl: "http://127.0.0.1:9" }),
  );
  const r = await runSvc(["whoami"], { cwd: home, env: { ...env, SVC_CLOUD_API_URL: "http://127.0.0.1:9" } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^svc whoami: cannot reach the cloud API at http:\/\/127\.0\.0\.1:9/);
});
