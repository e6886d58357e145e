// svc models list | pull | rm, and svc start on a Hub model, against a real
// svc server and the loopback test Hub (packages/server/test/hub-server.ts):
// pull downloads into the Hugging Face cache with progress and resumes,
// list shows the cached model with its size and revision, svc start prints
// the download before training, rm frees the cache; gated and offline pulls
// fail naming HF_TOKEN and HF_HUB_OFFLINE; pull --server has the server
// download into its own cache.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, REPO_ROOT, runSvc, startTestServer, type TestServer, tempDir } from "./harness.js";

/** The server package's loopback test Hub, as far as this test uses it. */
interface TestHub {
  url: string;
  addRepo(options: { kind?: "model" | "dataset"; repo: string; dir: string; gated?: boolean }): string;
  requestsTo(part?: string): { method: string; range: string | null }[];
  cutAfter(bytes: number, times?: number): void;
  close(): Promise<void>;
}
type Repos = { qwen3Repo(dir: string): string; shardedQwen3Repo(dir: string): string };

const SERVER_TEST = join(REPO_ROOT, "packages", "server", "dist", "test");
const QWEN = "test-org/qwen3-tiny";
const SHARDED = "test-org/qwen3-sharded";
const GATED = "test-org/qwen3-gated";
const ON_SERVER = "test-org/qwen3-on-server";
const NEOX = "test-org/neox-tiny";

/** A GPT-NeoX repo (an architecture svc's engine does not implement), zeros for weights, Qwen's tokenizer. */
async function neoxRepo(dir: string, tokenizerFrom: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "config.json"),
    JSON.stringify({
      architectures: ["GPTNeoXForCausalLM"],
      model_type: "gpt_neox",
      max_position_embeddings: 64,
    }),
  );
  await copyFile(join(tokenizerFrom, "tokenizer.json"), join(dir, "tokenizer.json"));
  const header = JSON.stringify({
    "embed_out.weight": { dtype: "F32", shape: [4, 2], data_offsets: [0, 32] },
  });
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(header)));
  await writeFile(
    join(dir, "model.safetensors"),
    Buffer.concat([length, Buffer.from(header), Buffer.alloc(32)]),
  );
  return dir;
}

let hub: TestHub;
let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;
const shas: Record<string, string> = {};

before(async () => {
  const { TestHub } = (await import(join(SERVER_TEST, "hub-server.js"))) as {
    TestHub: { start(): Promise<TestHub> };
  };
  const repos = (await import(join(SERVER_TEST, "hub-repos.js"))) as Repos;
  hub = await TestHub.start();
  const dirs = await tempDir("hub-model-repos");
  shas.qwen = hub.addRepo({ repo: QWEN, dir: repos.qwen3Repo(join(dirs, "qwen")) });
  shas.sharded = hub.addRepo({ repo: SHARDED, dir: repos.shardedQwen3Repo(join(dirs, "sharded")) });
  hub.addRepo({ repo: GATED, dir: repos.qwen3Repo(join(dirs, "gated")), gated: true });
  shas.onServer = hub.addRepo({ repo: ON_SERVER, dir: repos.qwen3Repo(join(dirs, "on-server")) });
  hub.addRepo({ repo: NEOX, dir: await neoxRepo(join(dirs, "neox"), join(dirs, "qwen")) });
  home = await tempDir("hub-models-home");
  const hf = { HF_HOME: join(home, "hf"), HF_ENDPOINT: hub.url };
  server = await startTestServer({
    home,
    args: ["--bundled-models", "none", "--hub-models", "test-org/*"],
    env: hf,
  });
  env = cliEnv(home, server.apiUrl, hf);
});

after(async () => {
  await server?.stop();
  await hub?.close();
});

test("svc models pull downloads a Hub model into the cache, resuming a cut download; list shows it; rm removes it", async () => {
  hub.cutAfter(20_000);
  const pulled = await runSvc(["models", "pull", QWEN], { cwd: home, env });
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.match(
    pulled.stderr,
    new RegExp(`^downloading base model ${QWEN} at ${shas.qwen!.slice(0, 12)}: 4 files, [\\d.]+ kB$`, "m"),
  );
  assert.match(
    pulled.stderr,
    new RegExp(`^base model ${QWEN} at ${shas.qwen!.slice(0, 12)}: [\\d.]+ kB downloaded$`, "m"),
  );
  assert.match(
    pulled.stdout,
    new RegExp(`^${QWEN}: Qwen3ForCausalLM, commit ${shas.qwen}, in .*snapshots/${shas.qwen}$`, "m"),
  );
  assert.ok(
    hub.requestsTo("/lfs-blobs/").some((r) => r.range === "bytes=20000-"),
    "the cut download resumed with Range",
  );

  const again = await runSvc(["models", "pull", QWEN], { cwd: home, env });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /found in the Hugging Face cache/);

  const listed = await runSvc(["models", "list"], { cwd: home, env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^NAME\s+SOURCE\s+FAMILY\s+PARAMS\s+CONTEXT\s+SIZE\s+REVISION$/m);
  assert.match(
    listed.stdout,
    new RegExp(`^${QWEN}\\s+hub\\s+qwen3\\s+\\S+\\s+512\\s+[\\d.]+ kB\\s+${shas.qwen!.slice(0, 12)}$`, "m"),
  );

  const removed = await runSvc(["models", "rm", QWEN], { cwd: home, env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /^Removed test-org\/qwen3-tiny from .* \([\d.]+ kB freed\)$/m);
  assert.ok(!existsSync(join(home, "hf", "hub", "models--test-org--qwen3-tiny")));
  const after = await runSvc(["models", "list", "--json"], { cwd: home, env });
  assert.ok(!JSON.parse(after.stdout).some((m: { name: string }) => m.name === QWEN));

  const missing = await runSvc(["models", "rm", QWEN], { cwd: home, env });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /test-org\/qwen3-tiny is not in the Hugging Face cache/);
});

test("svc models pull names HF_TOKEN for a gated model and HF_HUB_OFFLINE offline", async () => {
  const gated = await runSvc(["models", "pull", GATED], { cwd: home, env });
  assert.equal(gated.code, 1);
  assert.match(gated.stderr, /svc models: test-org\/qwen3-gated: .*401.*set HF_TOKEN/);
  const offline = await runSvc(["models", "pull", "test-org/qwen3-sharded"], {
    cwd: home,
    env: { ...env, HF_HUB_OFFLINE: "1" },
  });
  assert.equal(offline.code, 1);
  assert.match(offline.stderr, /not in the Hugging Face cache .* HF_HUB_OFFLINE=1/);
  const bad = await runSvc(["models", "pull", "not a model"], { cwd: home, env });
  assert.equal(bad.code, 2);
});

test("svc models pull of an architecture svc's engine does not implement says how it trains, and that it is not served", async () => {
  const r = await runSvc(["models", "pull", NEOX], { cwd: home, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /test-org\/neox-tiny: GPTNeoXForCausalLM, commit [0-9a-f]{40}/);
  assert.match(
    r.stdout,
    /does not implement this architecture: it trains on the PyTorch backend with "backend": "torch" and "hyperparameters.torchModel": "transformers" and is not served/,
  );
});

test("svc start on a Hub model prints its download before training", async () => {
  const dir = await tempDir("hub-model-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await mkdir(join(dir, "data"));
  const rows = Array.from({ length: 8 }, (_, i) =>
    JSON.stringify({
      messages: [
        { role: "user", content: `${i}?` },
        { role: "assistant", content: `${i + 1}` },
      ],
    }),
  );
  await writeFile(join(dir, "data", "train.jsonl"), `${rows.join("\n")}\n`);
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const trainer = createTrainer({
  name: "hub-model",
  model: "${SHARDED}",
  dataset: { type: "file", path: "data/train.jsonl" },
  lora: { r: 4, alpha: 8, maxLength: 64 },
  maxSteps: 2,
  batchSize: 2,
});
export default createSvc({ trainer });
`,
  );
  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 300_000 });
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n${server.log()}`);
  const lines = r.stdout.split("\n");
  const start = lines.findIndex((l) =>
    l.startsWith(`downloading base model ${SHARDED} at ${shas.sharded!.slice(0, 12)}: 6 files`),
  );
  const done = lines.findIndex(
    (l) =>
      l.startsWith(`base model ${SHARDED} at ${shas.sharded!.slice(0, 12)}:`) && l.endsWith("downloaded"),
  );
  const started = lines.findIndex((l) => l.startsWith("started:"));
  assert.ok(start >= 0 && start < done && done < started, r.stdout);
  assert.match(r.stdout, /^completed: /m);
});

test("svc models pull --server has the server download into its cache, not this machine's", async () => {
  const elsewhere = { ...env, HF_HOME: join(home, "cli-hf") };
  const pulled = await runSvc(["models", "pull", ON_SERVER, "--server"], { cwd: home, env: elsewhere });
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.match(
    pulled.stderr,
    new RegExp(`^base model ${ON_SERVER} at ${shas.onServer!.slice(0, 12)}: [\\d.]+ kB downloaded$`, "m"),
  );
  assert.equal(pulled.stdout, `${ON_SERVER}: commit ${shas.onServer}, in the server's Hugging Face cache\n`);
  assert.ok(
    existsSync(join(home, "hf", "hub", "models--test-org--qwen3-on-server", "snapshots", shas.onServer!)),
  );
  assert.ok(!existsSync(join(home, "cli-hf", "hub", "models--test-org--qwen3-on-server")));
  const listed = await runSvc(["models", "list", "--json"], { cwd: home, env: elsewhere });
  assert.ok(JSON.parse(listed.stdout).some((m: { name: string }) => m.name === ON_SERVER));

  const gated = await runSvc(["models", "pull", GATED, "--server"], { cwd: home, env: elsewhere });
  assert.equal(gated.code, 1);
  assert.match(gated.stderr, /svc models: test-org\/qwen3-gated: .*401.*set HF_TOKEN/);
  const refused = await runSvc(["models", "pull", "other-org/x", "--server"], { cwd: home, env: elsewhere });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /svc server --hub-models test-org\/\*/);
});
