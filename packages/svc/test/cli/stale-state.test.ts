// A project whose .svc/state.json names an org the current anonymous identity
// cannot see (~/.svc deleted, a new identity, a copied folder) heals: svc start
// creates a project for the current identity, says so in one line and keeps the
// old file. (The OAuth case, an error that says what to write, is in login.test.ts.)
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;
let home: string;

before(async () => {
  home = await tempDir("stale-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

test("anonymous: a state naming an org this identity cannot see is recreated, with one line and a backup", async () => {
  const dir = await tempDir("stale-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = [{ messages: [{ role: "user", content: "q" }, { role: "assistant", content: "a" }] }];
export default createSvc({ trainer: createTrainer({ name: "stale", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, maxSteps: 2 }) });
`,
  );
  await mkdir(join(dir, ".svc"));
  const old = `${JSON.stringify({ orgSlug: "anon-gone", projectSlug: "copied", projectId: "0000" })}\n`;
  const path = join(dir, ".svc", "state.json");
  await writeFile(path, old);

  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const creds = JSON.parse(await readFile(join(home, ".svc", "credentials.json"), "utf8"));
  const state = JSON.parse(await readFile(path, "utf8"));
  assert.equal(state.orgSlug, creds.orgSlug);
  const backups = (await readdir(join(dir, ".svc"))).filter((f) => f.startsWith("state.json.bak-"));
  assert.equal(backups.length, 1);
  assert.equal(await readFile(join(dir, ".svc", backups[0]), "utf8"), old);
  assert.equal(
    r.stderr,
    `svc: project anon-gone/copied from ${path} was not found for the current identity; ` +
      `created ${state.orgSlug}/${state.projectSlug} (old file kept as ${join(dir, ".svc", backups[0])})\n`,
  );
  assert.match(r.stdout, /done: job \S+ \(adapter: final\)/);

  // Healed once: the next run uses the new state and says nothing more.
  const again = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stderr, "");
  assert.deepEqual(JSON.parse(await readFile(path, "utf8")), state);
});
