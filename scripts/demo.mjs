// The main job, end to end, on a fresh machine (`npm run demo` after `.ci/install`):
// a new project from the ticket-triage template, `npm install` in it (the SDK is a
// file: link, nothing comes from the registry), `svc start` to a completed job,
// a deployment of the final adapter with an API key, one call with the official
// `openai` client, and Studio left running.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SVC = join(root, "packages", "svc", "bin", "svc.js");

function fail(message) {
  console.error(`demo: ${message}`);
  process.exit(1);
}

function step(title) {
  console.log(`\n== ${title}`);
}

/** Runs svc in the project; inherit shows progress live, otherwise the output is returned. */
function svc(args, cwd, { inherit = false } = {}) {
  const r = spawnSync(process.execPath, [SVC, ...args], {
    cwd,
    stdio: inherit ? "inherit" : ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  if (r.status !== 0) fail(`svc ${args.join(" ")} exited with ${r.status}`);
  return r.stdout ?? "";
}

if (!existsSync(join(root, "models", "pico-llama", "config.json"))) {
  fail("the bundled base model svc/pico-llama is missing: models/pico-llama/config.json does not exist");
}
if (!existsSync(join(root, "packages", "svc", "dist", "src", "cli", "main.js"))) {
  fail("svc is not built; run `bash .ci/install` (or `npm run build`) first");
}

const work = mkdtempSync(join(tmpdir(), "svc-demo-"));
const project = join(work, "ticket-triage");

step(`svc init ${project} --template ticket-triage`);
svc(["init", project, "--template", "ticket-triage"], work, { inherit: true });

step("npm install (offline: the only dependency is the file: link to this repository's SDK)");
const npm = spawnSync("npm", ["install", "--offline", "--no-audit", "--no-fund"], {
  cwd: project,
  stdio: "inherit",
});
if (npm.status !== 0) fail("npm install failed in the new project");

step("svc start: fine-tune svc/pico-llama with LoRA on data/train.jsonl");
svc(["start"], project, { inherit: true });
const jobs = JSON.parse(svc(["jobs", "list", "--json"], project));
const job = jobs
  .filter((j) => j.status === "completed")
  .sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
if (!job) fail("no completed job after svc start");

step("svc deploy create: publish the final adapter");
const slug = `triage-${job.id.slice(0, 8)}`;
const deployment = JSON.parse(svc(["deploy", "create", "--slug", slug, "--job", job.id, "--json"], project));
console.log(`deployment ${deployment.slug}: ${deployment.url}`);

step("svc keys issue: an API key for it (shown once)");
const key = JSON.parse(svc(["keys", "issue", slug, "--label", "demo", "--json"], project));
console.log(`key ${key.prefix}… issued`);

step("call it with the official openai client");
// *.localhost does not resolve through glibc's getaddrinfo, so Node clients use the
// edge's /d/<slug>/v1 path form on 127.0.0.1.
const url = new URL(deployment.url);
const baseURL = `http://127.0.0.1:${url.port || 80}/d/${deployment.slug}/v1`;
const { default: OpenAI } = await import("openai");
const client = new OpenAI({ baseURL, apiKey: key.plaintext });
const ticket =
  "Hi, I was charged twice for my Pro plan this month. This is urgent, our whole team is blocked.";
const completion = await client.chat.completions.create({
  model: deployment.slug,
  messages: [
    {
      role: "system",
      content:
        'Classify the support ticket. Reply with JSON only: {"category": "billing"|"technical"|"account"|"shipping", "priority": "low"|"medium"|"high"}.',
    },
    { role: "user", content: ticket },
  ],
  max_tokens: 32,
  temperature: 0,
});
console.log(`base URL: ${baseURL}`);
console.log(`ticket:   ${ticket}`);
console.log(`answer:   ${completion.choices[0].message.content}`);

step(
  "svc dev: Studio stays running (Ctrl-C stops it; the local server keeps running, `svc server stop` stops it)",
);
console.log(`project:  ${project}`);
console.log("Studio:   http://localhost:4000");
const studio = spawn(process.execPath, [SVC, "dev"], { cwd: project, stdio: "inherit" });
studio.on("exit", (code) => process.exit(code ?? 0));
