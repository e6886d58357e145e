// Training methods from the CLI and the SDK: createTrainer's `method` and
// `svc start --method` reach the job; `svc jobs show` shows the method; a DPO
// trainer trains on inline preference pairs; a preference file in an SFT job is
// refused naming the dataset, and a bad --method is a usage error (exit 2).
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  const home = await tempDir("method-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

const PAIRS = Array.from({ length: 8 }, (_, i) => ({
  prompt: `q${i}`,
  chosen: `yes ${i}`,
  rejected: `no ${i}`,
}));

async function project(trainer: string): Promise<string> {
  const dir = await tempDir("method-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await mkdir(join(dir, "data"), { recursive: true });
  await writeFile(join(dir, "data", "pairs.jsonl"), `${PAIRS.map((p) => JSON.stringify(p)).join("\n")}\n`);
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const pairs = ${JSON.stringify(PAIRS)};
export default createSvc({ trainer: createTrainer({ name: "method", model: "${TEST_MODEL}" as "svc/pico-llama", batchSize: 2, maxSteps: 2, ${trainer} }) });
`,
  );
  return dir;
}

test('a trainer with method "dpo" trains on inline pairs and `svc jobs show` says so', async () => {
  const dir = await project(`method: "dpo", beta: 0.2, dataset: { type: "inline", rows: pairs }`);
  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const id = /^job (\S+) submitted/m.exec(run.stdout)![1];
  const shown = await runSvc(["jobs", "show", id], { cwd: dir, env });
  assert.match(shown.stdout, /^status {6}completed$/m);
  assert.match(shown.stdout, /^method {6}dpo$/m);
  // A DPO job left at "auto" stays "auto": either backend may claim it (docs/post-training.md#backends).
  assert.match(shown.stdout, /^backend {5}auto$/m);
  const json = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(json.job.method, "dpo");
  assert.equal(json.job.hyperparameters.beta, 0.2);
});

test("svc start --method dpo trains a trainer's preference file; without it the file is refused by name", async () => {
  const dir = await project(`dataset: { type: "file", path: "data/pairs.jsonl" }`);
  const sft = await runSvc(["start", "--detach"], { cwd: dir, env });
  assert.equal(sft.code, 1, sft.stdout);
  assert.match(sft.stderr, /"datasetId": dataset \S+ holds preference pairs; train it with "method": "dpo"/);
  const dpo = await runSvc(["start", "--method", "dpo"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(dpo.code, 0, `${dpo.stdout}\n${dpo.stderr}`);
  const id = /^job (\S+) submitted/m.exec(dpo.stdout)![1];
  assert.match((await runSvc(["jobs", "show", id], { cwd: dir, env })).stdout, /^method {6}dpo$/m);
  const bad = await runSvc(["start", "--method", "ppo"], { cwd: dir, env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--method must be sft, dpo or grpo \(got "ppo"\)/);
});
