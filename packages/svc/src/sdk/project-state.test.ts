import assert from "node:assert/strict";
import { mkdtemp, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CloudApiClient } from "./client.js";
import {
  ensureProjectState,
  MissingProjectStateError,
  projectSlugFor,
  projectStatePath,
  readProjectState,
  writeProjectState,
} from "./project-state.js";

test("state round-trips through .svc/state.json", async () => {
  const dir = await mkdtemp(join(tmpdir(), "svc-proj-"));
  assert.equal(await readProjectState(dir), null);
  await writeProjectState(dir, { orgSlug: "o", projectSlug: "p", projectId: "id" });
  assert.deepEqual(await readProjectState(dir), { orgSlug: "o", projectSlug: "p", projectId: "id" });
  assert.equal(projectStatePath(dir), join(dir, ".svc", "state.json"));
});

test("OAuth credentials and no state: a missing-state error that says what to write, and no file", async () => {
  const dir = await mkdtemp(join(tmpdir(), "svc-proj-"));
  const client = new CloudApiClient({ baseUrl: "http://127.0.0.1:9" });
  await assert.rejects(
    ensureProjectState(dir, client, {
      mode: "oauth",
      accessToken: "a.b.c",
      issuer: "http://i",
      clientId: "c",
      orgSlug: "acme",
      apiUrl: "http://127.0.0.1:9",
    }),
    (e: Error) =>
      e instanceof MissingProjectStateError &&
      e.message.includes(projectStatePath(dir)) &&
      e.message.includes('{"orgSlug":"acme","projectSlug":"<project slug>","projectId":"<project id>"}'),
  );
  await assert.rejects(stat(projectStatePath(dir)), /ENOENT/);
});

test("project slugs come from the directory name", () => {
  assert.equal(projectSlugFor("/tmp/My Cool_App!"), "my-cool-app");
  assert.equal(projectSlugFor("/tmp/x"), "project-x");
});
