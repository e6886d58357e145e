// A trainer whose dataset is a Hub dataset's split: `svc start` has the server
// read it from the loopback test Hub into the Hugging Face cache and trains on
// it; a split the dataset does not have fails `svc start` with the server's
// message, before any job is submitted (docs/hub.md#datasets).
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  cliEnv,
  createTestModel,
  REPO_ROOT,
  runSvc,
  startTestServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

/** The server package's loopback test Hub (packages/server/test/hub-server.ts), as far as this test uses it. */
interface TestHub {
  url: string;
  addRepo(options: { kind: "model" | "dataset"; repo: string; dir: string }): string;
  close(): Promise<void>;
}

let hub: TestHub;
let server: TestServer;
let env: NodeJS.ProcessEnv;

const trainer = (dataset: string, extra = "") => `import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "hub-data",
  model: "${TEST_MODEL}" as "svc/pico-llama",
  dataset: ${dataset},${extra}
  maxSteps: 2,
  batchSize: 2,
  seed: 1,
});

export default createSvc({ trainer });
`;

async function project(dataset: string, extra = ""): Promise<string> {
  const dir = await tempDir("hub-data-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(join(dir, "src", "svc", "index.ts"), trainer(dataset, extra));
  return dir;
}

before(async () => {
  const url = join(REPO_ROOT, "packages", "server", "dist", "test", "hub-server.js");
  const { TestHub } = (await import(url)) as { TestHub: { start(): Promise<TestHub> } };
  hub = await TestHub.start();
  hub.addRepo({
    kind: "dataset",
    repo: "org/alpaca",
    dir: join(REPO_ROOT, "packages", "server", "test", "fixtures", "hub-datasets", "alpaca"),
  });
  const home = await tempDir("hub-data-home");
  const hf = { HF_HOME: join(home, "hf"), HF_ENDPOINT: hub.url };
  server = await startTestServer({
    home,
    args: ["--bundled-models", "none", "--model", `${TEST_MODEL}=${await createTestModel()}`],
    env: hf,
  });
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
  await hub?.close();
});

test("svc start trains on a Hub dataset's split (Parquet, Alpaca columns)", async () => {
  const dir = await project(
    `{ type: "huggingface", name: "org/alpaca", split: "train" }`,
    `\n  evalDataset: { type: "huggingface", name: "org/alpaca", split: "train", columns: { instruction: "instruction", output: "output" } },`,
  );
  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 300_000 });
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n${server.log()}`);
  assert.match(r.stdout, /^job \S+ submitted: hub-data on test\/tiny-random$/m);
  // The server reads the split before the job exists; svc start says so, then what it read.
  const lines = r.stdout.split("\n");
  const reading = lines.indexOf(
    'dataset: org/alpaca split "train": reading it from the Hugging Face Hub (the server fetches it into its cache)…',
  );
  assert.ok(reading >= 0, r.stdout);
  assert.match(
    lines[reading + 1],
    /^dataset: org\/alpaca split "train": 4 rows from data\/train-00000-of-00001.parquet at [0-9a-f]{12} \(downloaded; columns instruction, output, input\)$/,
  );
  assert.match(r.stdout, /^started: 2 steps, 4 train \/ 4 eval examples/m);
  // The eval set maps only instruction and output: the input column is left out.
  assert.match(
    r.stdout,
    /^eval dataset: org\/alpaca split "train": 4 rows from data\/train-00000-of-00001.parquet at [0-9a-f]{12} \(from the cache; columns instruction, output\)$/m,
  );
  assert.match(r.stdout, /completed/);
});

test("a split the dataset does not have fails svc start with the splits it has", async () => {
  const dir = await project(`{ type: "huggingface", name: "org/alpaca", split: "validation" }`);
  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /org\/alpaca: no split "validation"; splits found: "train"/);
  assert.doesNotMatch(r.stdout, /submitted/);
});
