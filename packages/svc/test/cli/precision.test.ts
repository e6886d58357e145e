// A job's training precision from the SDK and the CLI (docs/training-precision.md):
// createTrainer's `precision` and `svc start --precision` reach the job; the
// started line says what ran and `svc jobs show` what was asked; a bad
// --precision is a usage error (exit 2).
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  const home = await tempDir("precision-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

const ROWS = Array.from({ length: 8 }, (_, i) => ({
  messages: [
    { role: "user", content: `q${i}` },
    { role: "assistant", content: `a${i}` },
  ],
}));

async function project(trainer: string): Promise<string> {
  const dir = await tempDir("precision-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = ${JSON.stringify(ROWS)};
export default createSvc({ trainer: createTrainer({ name: "precision", model: "${TEST_MODEL}" as "svc/pico-llama", batchSize: 4, maxSteps: 2, dataset: { type: "inline", rows }, ${trainer} }) });
`,
  );
  return dir;
}

test('createTrainer({ precision: "bf16" }) trains in bf16; svc start --precision fp32 overrides it', async () => {
  const dir = await project(`precision: "bf16"`);
  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /^started: 2 steps, .*, in bf16$/m);
  const id = /^job (\S+) submitted/m.exec(run.stdout)![1];
  const shown = await runSvc(["jobs", "show", id], { cwd: dir, env });
  assert.match(shown.stdout, /^precision {3}bf16$/m);
  const json = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(json.job.precision, "bf16");
  assert.equal(json.job.baseWeights, null);

  const fp32 = await runSvc(["start", "--precision", "fp32"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(fp32.code, 0, `${fp32.stdout}\n${fp32.stderr}`);
  assert.match(fp32.stdout, /^started: 2 steps, .*, in fp32$/m);
  const fp32Id = /^job (\S+) submitted/m.exec(fp32.stdout)![1];
  assert.match((await runSvc(["jobs", "show", fp32Id], { cwd: dir, env })).stdout, /^precision {3}fp32$/m);

  const bad = await runSvc(["start", "--precision", "fp16"], { cwd: dir, env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--precision must be fp32, bf16, auto \(got "fp16"\)/);
});

test("an int8 base is asked for with createTrainer and shown by svc jobs show", async () => {
  const dir = await project(`precision: "fp32", baseWeights: "int8"`);
  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /^started: 2 steps, .*, in fp32 on an int8 base$/m);
  const id = /^job (\S+) submitted/m.exec(run.stdout)![1];
  const shown = await runSvc(["jobs", "show", id], { cwd: dir, env });
  assert.match(shown.stdout, /^precision {3}fp32, base weights int8$/m);
});
