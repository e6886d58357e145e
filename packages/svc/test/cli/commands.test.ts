// The CLI's surface as a real process: --help everywhere, usage errors exit 2
// with one line, failures exit 1, the manifest messages, job commands, and the
// background server that commands start on demand (DESIGN §4).
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { needs } from "@svc/engine/testing";
import OpenAI from "openai";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  home = await tempDir("cmd-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

const COMMANDS = [
  "init",
  "build",
  "start",
  "dev",
  "jobs",
  "deploy",
  "keys",
  "login",
  "logout",
  "whoami",
  "server",
  "worker",
];

test("--help works on every command and exits 0", async () => {
  const top = await runSvc(["--help"], { cwd: home, env });
  assert.equal(top.code, 0);
  for (const c of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${c} +\\S`, "m"), c);
  for (const c of COMMANDS) {
    const r = await runSvc([c, "--help"], { cwd: home, env });
    assert.equal(r.code, 0, `${c}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`[Uu]sage: svc ${c}`), c);
  }
});

test("usage mistakes exit 2 with one clear line", async () => {
  const unknown = await runSvc(["fly"], { cwd: home, env });
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stderr, 'svc: unknown command "fly"; run svc --help for the list\n');
  const badFlag = await runSvc(["deploy", "create", "--slug", "x", "--job", "j", "--step", "two"], {
    cwd: home,
    env,
  });
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /^svc deploy: --step: expected an integer from 1 to \d+, got "two"\n/);
  const noTarget = await runSvc(["deploy", "create", "--slug", "x"], { cwd: home, env });
  assert.equal(noTarget.code, 2);
  assert.match(noTarget.stderr, /a target is required/);
  const upstreamNoModel = await runSvc(
    ["deploy", "create", "--slug", "x", "--base-model", "m/x", "--upstream", "vllm"],
    { cwd: home, env },
  );
  assert.equal(upstreamNoModel.code, 2);
  assert.match(upstreamNoModel.stderr, /--upstream needs --upstream-model/);
  const modelAlone = await runSvc(
    ["deploy", "create", "--slug", "x", "--base-model", "m/x", "--upstream-model", "y"],
    { cwd: home, env },
  );
  assert.equal(modelAlone.code, 2);
  assert.match(modelAlone.stderr, /--upstream-model needs --upstream <name>/);
  const badWeights = await runSvc(
    ["deploy", "create", "--slug", "x", "--base-model", "m/x", "--weights", "int4"],
    { cwd: home, env },
  );
  assert.equal(badWeights.code, 2);
  assert.match(badWeights.stderr, /--weights: expected one of fp32, bf16, int8, q4_0, default, got "int4"/);
  const badTemplate = await runSvc(["init", join(home, "p"), "--template", "nope"], { cwd: home, env });
  assert.equal(badTemplate.code, 2);
  assert.match(
    badTemplate.stderr,
    /--template: unknown template "nope"; one of .*pii-redaction, reply-tone, ticket-triage, tool-calling/,
  );
});

test("init --list shows every template; pii-redaction and tool-calling scaffold their own trainers", async () => {
  const list = await runSvc(["init", "--list"], { cwd: home, env });
  assert.match(list.stdout, /^pii-redaction +\S/m);
  assert.match(list.stdout, /^ticket-triage +\S/m);
  assert.match(list.stdout, /^tool-calling +\S/m);
  const tools = join(home, "support");
  assert.equal((await runSvc(["init", tools, "--template", "tool-calling"], { cwd: home, env })).code, 0);
  assert.match(await readFile(join(tools, "src", "svc", "index.ts"), "utf8"), /name: "tool-calling"/);
  const toolRows = (await readFile(join(tools, "data", "train.jsonl"), "utf8")).trim().split("\n");
  assert.equal(toolRows.length, 240);
  assert.ok(
    toolRows.some((row) => JSON.parse(row).messages.some((m: { tool_calls?: unknown }) => m.tool_calls)),
  );
  const dir = join(home, "redact");
  assert.equal((await runSvc(["init", dir, "--template", "pii-redaction"], { cwd: home, env })).code, 0);
  assert.match(await readFile(join(dir, "src", "svc", "index.ts"), "utf8"), /name: "pii-redaction"/);
  const rows = (await readFile(join(dir, "data", "train.jsonl"), "utf8")).trim().split("\n");
  assert.equal(rows.length, 240);
  assert.match(JSON.parse(rows[0]).messages[2].content, /\[(NAME|EMAIL|PHONE)\]/);
});

async function projectWith(source: string | null) {
  const dir = await tempDir("cmd-project");
  if (source !== null) {
    await mkdir(join(dir, "src", "svc"), { recursive: true });
    await writeFile(join(dir, "src", "svc", "index.ts"), source);
  }
  return dir;
}

test("svc start without a trainer says what to add; build errors are file:line:col", async () => {
  const empty = await projectWith("export const nothing = 1;\n");
  const r = await runSvc(["start"], { cwd: empty, env });
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr,
    "svc start: No trainer in src/svc/index.ts yet. Add createTrainer(...) and pass it to createSvc.\n",
  );
  const broken = await projectWith("import { createTrainer } from 'svc';\ncreateTrainer(;\n");
  const b = await runSvc(["start"], { cwd: broken, env });
  assert.equal(b.code, 1);
  assert.match(b.stderr, /^src\/svc\/index\.ts:2:15 Unexpected ";"\nsvc start: the build failed\n$/);
  await assert.rejects(stat(join(broken, ".svc", "state.json")), /ENOENT/);
});

const trainerSource = (extra: string) => `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 8 }, (_, i) => ({ messages: [{ role: "user", content: "q" + i }, { role: "assistant", content: "a" + i }] }));
export default createSvc({ trainer: createTrainer({ name: "cmd", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, batchSize: 2, ${extra} }) });
`;

test("a failing job makes svc start exit 1 with the job's error", async () => {
  // maxLength 4 leaves no assistant token to learn from: the worker fails the job.
  const dir = await projectWith(trainerSource("maxSteps: 2, lora: { r: 2, alpha: 4, maxLength: 4 }"));
  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /^failed: /m);
  assert.match(r.stderr, /^svc start: training failed: .+$/m);
});

test("jobs list/show/follow/cancel over the same client", async () => {
  // Far more steps than the test can wait for, so the cancel always lands on a live job
  // (the server's default step limit, 100000: svc server --max-job-steps).
  const dir = await projectWith(trainerSource("maxSteps: 100000"));
  const none = await runSvc(["jobs"], { cwd: dir, env });
  assert.equal(none.code, 0);
  assert.match(none.stdout, /^No jobs yet \(no project yet/);
  const started = await runSvc(["start", "--detach"], { cwd: dir, env });
  assert.equal(started.code, 0, started.stderr);
  const jobId = /^job (\S+) submitted/m.exec(started.stdout)![1];
  const cancelled = await runSvc(["jobs", "cancel", jobId], { cwd: dir, env });
  assert.equal(cancelled.code, 0, cancelled.stderr);
  const follow = await runSvc(["jobs", "follow", jobId], { cwd: dir, env });
  assert.equal(follow.code, 1, "a cancelled job follows to a non-zero exit");
  assert.match(follow.stdout, /^cancelled/m);
  const show = await runSvc(["jobs", "show", jobId], { cwd: dir, env });
  assert.match(show.stdout, /^status {6}cancelled$/m);
  const list = await runSvc(["jobs", "list"], { cwd: dir, env });
  assert.match(list.stdout, /^STATUS +NAME +CREATED +ID\ncancelled +cmd +.+ [0-9a-f-]{36}\n$/);
  const missing = await runSvc(["jobs", "show", "00000000-0000-0000-0000-000000000000"], { cwd: dir, env });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^svc jobs: .*\(HTTP 404 \w+\)\n$/);
});

test("deploy create and update --weights set the deployment's weight format; show prints it", async () => {
  const dir = await projectWith(trainerSource("maxSteps: 2"));
  const slug = `weights-${process.pid}`;
  const created = await runSvc(
    ["deploy", "create", "--slug", slug, "--base-model", TEST_MODEL, "--weights", "int8", "--json"],
    { cwd: dir, env },
  );
  assert.equal(created.code, 0, created.stderr);
  assert.equal(JSON.parse(created.stdout).weightFormat, "int8");
  const shown = await runSvc(["deploy", "show", slug], { cwd: dir, env });
  assert.match(shown.stdout, /^weights {4}int8$/m);
  const reset = await runSvc(["deploy", "update", slug, "--weights", "default"], { cwd: dir, env });
  assert.equal(reset.code, 0, reset.stderr);
  assert.match(reset.stdout, /^weights {4}the server's default \(svc server --weights\)$/m);
});

test("keys list shows each key's requests and tokens of the last 30 days", async () => {
  const dir = await projectWith(trainerSource("maxSteps: 2"));
  const slug = `usage-${process.pid}`;
  const created = await runSvc(["deploy", "create", "--slug", slug, "--base-model", TEST_MODEL], {
    cwd: dir,
    env,
  });
  assert.equal(created.code, 0, created.stderr);
  const issue = async (label: string) => {
    const r = await runSvc(["keys", "issue", slug, "--label", label], { cwd: dir, env });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  const busy = new OpenAI({ apiKey: await issue("busy"), baseURL: `${server.edgeUrl}/d/${slug}/v1` });
  await issue("idle");
  let prompt = 0;
  let completion = 0;
  for (const maxTokens of [1, 3]) {
    const r = await busy.chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "hello" }],
      max_tokens: maxTokens,
    });
    prompt += r.usage?.prompt_tokens ?? 0;
    completion += r.usage?.completion_tokens ?? 0;
  }
  assert.ok(prompt > 0 && completion > 0);
  // Usage is written about once a second: read until the busy key's requests show.
  const busyRow = new RegExp(
    `^[0-9a-f-]{36} +busy +svc_live_\\w{3} +enabled +\\S+ +2 +${prompt} +${completion}$`,
    "m",
  );
  let listed = await runSvc(["keys", "list", slug], { cwd: dir, env });
  for (const deadline = Date.now() + 30_000; !busyRow.test(listed.stdout) && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 200));
    listed = await runSvc(["keys", "list", slug], { cwd: dir, env });
  }
  assert.equal(listed.code, 0, listed.stderr);
  const lines = listed.stdout.trimEnd().split("\n");
  assert.match(
    lines[0],
    /^ID +LABEL +PREFIX +STATE +LAST USED +REQUESTS 30D +PROMPT TOKENS 30D +COMPLETION TOKENS 30D$/,
  );
  assert.match(listed.stdout, busyRow);
  assert.match(listed.stdout, /^[0-9a-f-]{36} +idle +svc_live_\w{3} +enabled +never +0 +0 +0$/m);
  const json = JSON.parse((await runSvc(["keys", "list", slug, "--json"], { cwd: dir, env })).stdout);
  assert.deepEqual(
    json.map((k: { label: string; usage: unknown }) => [k.label, k.usage]),
    [
      ["busy", { days: 30, requests: 2, promptTokens: prompt, completionTokens: completion }],
      ["idle", { days: 30, requests: 0, promptTokens: 0, completionTokens: 0 }],
    ],
  );
});

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

test("a command that needs the backend starts it in the background; svc server status | stop", async (t) => {
  if (!(await portFree(4100)) || !(await portFree(4200))) {
    t.skip(needs("free ports 4100 and 4200", "127.0.0.1:4100 or :4200 is in use on this machine"));
    return;
  }
  const ownHome = await tempDir("autostart-home");
  const local = cliEnv(ownHome, null);
  const before = await runSvc(["server", "status"], { cwd: ownHome, env: local });
  assert.equal(before.code, 1);
  // login needs the backend (for its identity provider settings): the server starts, then login explains.
  const r = await runSvc(["login"], { cwd: ownHome, env: local, timeoutMs: 90_000 });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /has no identity provider/);
  try {
    const status = await runSvc(["server", "status"], { cwd: ownHome, env: local });
    assert.equal(status.code, 0, status.stdout);
    assert.match(
      status.stdout,
      /^http:\/\/127\.0\.0\.1:4100: healthy \(background server pid \d+; log: .+server\.log\)$/m,
    );
    assert.match(await readFile(join(ownHome, ".svc", "server", "server.log"), "utf8"), /svc-server-ready/);
  } finally {
    const stop = await runSvc(["server", "stop"], { cwd: ownHome, env: local });
    assert.equal(stop.stdout, "stopped the background server\n");
  }
  assert.equal((await runSvc(["server", "status"], { cwd: ownHome, env: local })).code, 1);
});
