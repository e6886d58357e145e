import assert from "node:assert/strict";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, test } from "node:test";
import {
  bearerToken,
  credentialsPath,
  deleteCredentials,
  readCredentials,
  writeCredentials,
} from "./credentials.js";

beforeEach(async () => {
  process.env.HOME = await mkdtemp(join(tmpdir(), "svc-home-"));
});

test("credentials live in ~/.svc/credentials.json with mode 0600", async () => {
  assert.equal(credentialsPath(), join(process.env.HOME!, ".svc", "credentials.json"));
  assert.equal(await readCredentials(), null);
  await writeCredentials({ mode: "anonymous", token: "tok", orgSlug: "anon-1", apiUrl: "http://x" });
  const st = await stat(credentialsPath());
  assert.equal(st.mode & 0o777, 0o600);
  const c = await readCredentials();
  assert.deepEqual(c, { mode: "anonymous", token: "tok", orgSlug: "anon-1", apiUrl: "http://x" });
  assert.equal(bearerToken(c!), "tok");
  await writeCredentials({
    mode: "oauth",
    accessToken: "a.b.c",
    issuer: "http://i",
    clientId: "cli",
    orgSlug: "o",
    apiUrl: "http://x",
  });
  assert.equal(bearerToken((await readCredentials())!), "a.b.c");
  assert.equal(await deleteCredentials(), true);
  assert.equal(await readCredentials(), null);
});

test("a broken credentials file is reported with its path and the field", async () => {
  await writeCredentials({ mode: "anonymous", token: "t", orgSlug: "o", apiUrl: "http://x" });
  await writeFile(credentialsPath(), "{ nope");
  await assert.rejects(readCredentials(), /credentials\.json is not valid JSON/);
  await writeFile(credentialsPath(), JSON.stringify({ mode: "anonymous", orgSlug: "o", apiUrl: "u" }));
  await assert.rejects(readCredentials(), /field "token" is missing/);
  await writeFile(credentialsPath(), JSON.stringify({ mode: "magic" }));
  await assert.rejects(readCredentials(), /field "mode" must be "anonymous" or "oauth"/);
  assert.match(await readFile(credentialsPath(), "utf8"), /magic/);
});
