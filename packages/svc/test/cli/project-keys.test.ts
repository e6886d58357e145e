// svc keys project issue|list|revoke against a real svc server: the key it
// prints works with the official openai client on the cloud API's OpenAI
// routes, with only baseURL and the key set, until `revoke` turns it off.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI, { APIError } from "openai";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  home = await tempDir("project-keys-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

test("svc keys project issues a key for the OpenAI routes, lists it, and revokes it", async () => {
  const dir = await tempDir("project-keys-project");
  // The first deployment writes .svc/state.json: the project the keys belong to.
  const slug = `keys-${process.pid}`;
  const created = await runSvc(["deploy", "create", "--slug", slug, "--base-model", TEST_MODEL], {
    cwd: dir,
    env,
  });
  assert.equal(created.code, 0, created.stderr);

  const issued = await runSvc(["keys", "project", "issue", "--label", "ci"], { cwd: dir, env });
  assert.equal(issued.code, 0, issued.stderr);
  const plaintext = issued.stdout.trim();
  assert.match(plaintext, /^svc_proj_[0-9A-Za-z]{40}$/);
  assert.match(issued.stderr, /shown once/);

  const client = new OpenAI({ apiKey: plaintext, baseURL: `${server.apiUrl}/v1`, maxRetries: 0 });
  assert.deepEqual((await client.files.list()).data, []);
  assert.ok((await client.models.list()).data.some((m) => m.id === TEST_MODEL));

  const listed = await runSvc(["keys", "project", "list"], { cwd: dir, env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^ID +LABEL +PREFIX +STATE +LAST USED$/m);
  const row = new RegExp(`^([0-9a-f-]{36}) +ci +${plaintext.slice(0, 12)} +enabled +\\S+$`, "m").exec(
    listed.stdout,
  );
  assert.ok(row, listed.stdout);
  const json = JSON.parse((await runSvc(["keys", "project", "list", "--json"], { cwd: dir, env })).stdout);
  assert.deepEqual(
    json.map((k: Record<string, unknown>) => [k.label, k.enabled, "plaintext" in k]),
    [["ci", true, false]],
  );

  const revoked = await runSvc(["keys", "project", "revoke", row[1]], { cwd: dir, env });
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stdout, `revoked project key ${row[1]} (ci)\n`);
  const refused = await client.files.list().then(
    () => assert.fail("a revoked key was accepted"),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof APIError);
  assert.equal(refused.status, 401);
  assert.equal(refused.code, "invalid_api_key");

  const usage = await runSvc(["keys", "project", "issue"], { cwd: dir, env });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--label: required/);
});
