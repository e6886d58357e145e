// A new user's path, every step a real process: svc init, npm install in the new
// project (offline, with an empty cache: nothing may come from the registry),
// svc build, svc start to a completed job, then deploy the adapter, issue a key
// and call it with the official openai client.
import assert from "node:assert/strict";
import { lstat, readFile, readlink, realpath, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import {
  cliEnv,
  REPO_ROOT,
  runProcess,
  runSvc,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;
let project: string;

before(async () => {
  home = await tempDir("home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
  project = join(await tempDir("work"), "triage");
});

after(async () => {
  await server?.stop();
});

test("svc init without a TTY scaffolds the default template and never waits", async () => {
  const r = await runSvc(["init", project], { cwd: REPO_ROOT, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /from the ticket-triage template/);
  for (const f of [
    "package.json",
    "src/svc/index.ts",
    "data/train.jsonl",
    "data/eval.jsonl",
    "README.md",
    "tsconfig.json",
  ]) {
    assert.ok((await stat(join(project, f))).isFile(), f);
  }
  const pkg = JSON.parse(await readFile(join(project, "package.json"), "utf8"));
  assert.deepEqual(pkg.dependencies, { svc: `file:${join(REPO_ROOT, "packages", "svc")}` });
  const again = await runSvc(["init", project], { cwd: REPO_ROOT, env });
  assert.equal(again.code, 1);
  assert.match(again.stderr, /is not empty; pick another directory or pass --force/);
});

test("npm install in the new project links the SDK and fetches nothing from the registry", async () => {
  const cache = await tempDir("empty-npm-cache");
  // --offline with an empty cache fails on any package that would have to be downloaded.
  const r = await runProcess("npm", ["install", "--offline", "--cache", cache, "--no-audit", "--no-fund"], {
    cwd: project,
    env,
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stderr);
  const link = join(project, "node_modules", "svc");
  assert.ok((await lstat(link)).isSymbolicLink(), "node_modules/svc is a link");
  assert.equal(await realpath(link), await realpath(join(REPO_ROOT, "packages", "svc")));
  assert.ok(await readlink(join(project, "node_modules", ".bin", "svc")));
  const lock = JSON.parse(await readFile(join(project, "package-lock.json"), "utf8"));
  const entries = Object.entries(lock.packages as Record<string, { link?: boolean; resolved?: string }>);
  const installed = entries.filter(([k]) => k.startsWith("node_modules/")).map(([k]) => k);
  assert.deepEqual(installed, ["node_modules/svc"]);
  assert.equal(lock.packages["node_modules/svc"].link, true);
  const target = resolve(project, lock.packages["node_modules/svc"].resolved);
  assert.equal(await realpath(target), await realpath(join(REPO_ROOT, "packages", "svc")));
  for (const [name, entry] of entries)
    assert.ok(!/^https?:/.test(entry.resolved ?? ""), `${name} came from ${entry.resolved}`);
});

test("the project type-checks against the linked SDK (what an editor sees)", async () => {
  const tsc = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
  const ok = await runProcess(process.execPath, [tsc, "-p", project], { cwd: project, env });
  assert.equal(ok.code, 0, ok.stdout);
  const source = join(project, "src", "svc", "index.ts");
  const original = await readFile(source, "utf8");
  await writeFile(source, original.replace('"svc/pico-llama"', '"svc/not-a-model"'));
  const bad = await runProcess(process.execPath, [tsc, "-p", project], { cwd: project, env });
  await writeFile(source, original);
  assert.equal(bad.code, 2);
  assert.match(bad.stdout, /"svc\/not-a-model"' is not assignable to type '"svc\/pico-llama"'/);
});

test("svc build reports errors as file:line:col and bundles a fixed file", async () => {
  const source = join(project, "src", "svc", "index.ts");
  const original = await readFile(source, "utf8");
  await writeFile(source, `${original}\nconst broken = ;\n`);
  const bad = await runSvc(["build"], { cwd: project, env });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^src\/svc\/index\.ts:\d+:16 Unexpected ";"$/m);
  // The user points the trainer at the small test model and shortens the run.
  const edited = original
    .replace('"svc/pico-llama"', `"${TEST_MODEL}"`)
    .replace("maxSteps: 600", "maxSteps: 6")
    .replace("batchSize: 8", "batchSize: 2")
    .replace("evalSteps: 50", "evalSteps: 3")
    .replace("saveSteps: 200", "saveSteps: 3")
    .replace("maxLength: 256", "maxLength: 320");
  await writeFile(source, edited);
  const r = await runSvc(["build"], { cwd: project, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "built .svc/build/index.mjs (trainer: ticket-triage)\n");
});

let jobId: string;

test("svc start trains to a completed job, printing plain progress lines", async () => {
  await assert.rejects(stat(join(project, ".svc", "state.json")), /ENOENT/, "no state before the first run");
  const r = await runSvc(["start"], { cwd: project, env, timeoutMs: 600_000 });
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n${server.log()}`);
  const m = /^job (\S+) submitted: ticket-triage on test\/tiny-random$/m.exec(r.stdout);
  assert.ok(m, r.stdout);
  jobId = m[1];
  // Two template rows are longer than the test model's maxLength in its byte-level tokens: cut on the prompt side.
  assert.match(
    r.stdout,
    /^started: 6 steps, 240 train \/ 40 eval examples, base model test\/tiny-random, in (bf16|fp32); 2 rows truncated, 0 rows dropped$/m,
  );
  assert.match(r.stdout, /^step 1\/6 loss=\d+\.\d{4}$/m);
  // Eval steps add the token accuracy. In the test model's byte tokens the template's JSON answers
  // are over 40 tokens, more than exactMatchMaxTokens' default: no exact match.
  assert.match(r.stdout, /^step 3\/6 (loss=\d+\.\d{4} )?evalLoss=\d+\.\d{4} evalTokenAccuracy=[01]\.\d{4}$/m);
  assert.match(r.stdout, /^checkpoint saved at step 3 \(checkpoint-3\)$/m);
  assert.match(r.stdout, /^completed: \d+ artifacts?, 6 steps, /m);
  assert.match(r.stdout, new RegExp(`^done: job ${jobId} \\(adapter: final\\)$`, "m"));
  const state = JSON.parse(await readFile(join(project, ".svc", "state.json"), "utf8"));
  assert.deepEqual(Object.keys(state).sort(), ["orgSlug", "projectId", "projectSlug"]);
  assert.equal(state.projectSlug, "triage");

  const who = await runSvc(["whoami"], { cwd: project, env });
  assert.equal(who.code, 0, who.stderr);
  assert.equal(who.stdout, `anonymous · ${state.orgSlug} / triage\n`);

  const list = await runSvc(["jobs", "list", "--json"], { cwd: project, env });
  const jobs = JSON.parse(list.stdout);
  assert.deepEqual(
    jobs.map((j: { id: string; status: string }) => [j.id, j.status]),
    [[jobId, "completed"]],
  );
});

test("deploy the final adapter, issue a key and call it with the openai client", async () => {
  const created = await runSvc(["deploy", "create", "--slug", "triage-test", "--job", jobId, "--json"], {
    cwd: project,
    env,
  });
  assert.equal(created.code, 0, created.stderr);
  const deployment = JSON.parse(created.stdout);
  assert.deepEqual(deployment.target, { kind: "adapter", adapter: { kind: "final", jobId } });
  assert.equal(deployment.authMode, "fixed_api_key");

  const issued = await runSvc(["keys", "issue", "triage-test", "--label", "ci"], { cwd: project, env });
  assert.equal(issued.code, 0, issued.stderr);
  const plaintext = issued.stdout.trim();
  assert.match(issued.stderr, /shown once/);

  const port = new URL(server.edgeUrl).port;
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/d/triage-test/v1`, apiKey: plaintext });
  const completion = await client.chat.completions.create({
    model: "ignored",
    messages: [{ role: "user", content: "My invoice is wrong." }],
    max_tokens: 8,
    temperature: 0,
  });
  assert.equal(completion.object, "chat.completion");
  assert.equal(typeof completion.choices[0].message.content, "string");

  const keys = JSON.parse(
    (await runSvc(["keys", "list", "triage-test", "--json"], { cwd: project, env })).stdout,
  );
  assert.equal(keys.length, 1);
  assert.equal(plaintext.startsWith(keys[0].prefix), true);
  const revoked = await runSvc(["keys", "revoke", "triage-test", keys[0].id], { cwd: project, env });
  assert.equal(revoked.code, 0, revoked.stderr);
  await assert.rejects(
    client.chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 2,
    }),
    (e: Error & { status?: number }) => e.status === 401,
  );

  const shown = await runSvc(["deploy", "show", "triage-test"], { cwd: project, env });
  assert.match(shown.stdout, /target {5}Final adapter \(job [0-9a-f]{8}\)/);
  assert.match(shown.stdout, /served by {2}this server's engine/);
  const undeclared = await runSvc(
    ["deploy", "update", "triage-test", "--upstream", "vllm", "--upstream-model", "triage"],
    { cwd: project, env },
  );
  assert.equal(undeclared.code, 1);
  assert.match(undeclared.stderr, /"upstream\.name": "vllm" is not an upstream of this server/);
  assert.match(shown.stdout, new RegExp(`base URL {3}http://127\\.0\\.0\\.1:${port}/d/triage-test/v1`));
  const updated = await runSvc(["deploy", "update", "triage-test", "--auth", "none", "--disable"], {
    cwd: project,
    env,
  });
  assert.equal(updated.code, 0, updated.stderr);
  assert.match(updated.stdout, /auth {7}none\nenabled {4}false/);
  const deleted = await runSvc(["deploy", "delete", "triage-test"], { cwd: project, env });
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal((await runSvc(["deploy", "list"], { cwd: project, env })).stdout, "No deployments\n");
});
