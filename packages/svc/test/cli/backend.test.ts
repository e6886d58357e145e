// Training backends from the CLI and the SDK: createTrainer's `backend` and
// `svc start --backend` reach the job; `svc jobs show` shows the backend and,
// for a queued job no running worker can take, why it waits; a bad backend
// is a usage error (exit 2) or a createTrainer TypeError naming the field.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createTrainer } from "../../src/index.js";
import { cliEnv, runSvc, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  const home = await tempDir("backend-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

async function project(extra: string): Promise<string> {
  const dir = await tempDir("backend-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 8 }, (_, i) => ({ messages: [{ role: "user", content: "q" + i }, { role: "assistant", content: "a" + i }] }));
export default createSvc({ trainer: createTrainer({ name: "backend", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, batchSize: 2, maxSteps: 2, ${extra} }) });
`,
  );
  return dir;
}

test("a torch job waits with its reason in `svc jobs show`; --backend engine overrides the trainer's", async () => {
  const dir = await project(`backend: "torch"`);
  const torch = await runSvc(["start", "--detach"], { cwd: dir, env });
  assert.equal(torch.code, 0, torch.stderr);
  const torchId = /^job (\S+) submitted/m.exec(torch.stdout)![1];
  assert.match(
    torch.stdout,
    /^job \S+ waits: no worker offers the torch backend: start one with `svc worker --backend torch`$/m,
  );
  const shown = await runSvc(["jobs", "show", torchId], { cwd: dir, env });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^status {6}queued$/m);
  assert.match(shown.stdout, /^backend {5}torch$/m);
  assert.match(
    shown.stdout,
    /^waiting {5}no worker offers the torch backend: start one with `svc worker --backend torch`$/m,
  );
  const json = JSON.parse((await runSvc(["jobs", "show", torchId, "--json"], { cwd: dir, env })).stdout);
  assert.equal(json.job.backend, "torch");
  assert.match(json.job.queuedReason, /svc worker --backend torch/);
  assert.equal((await runSvc(["jobs", "cancel", torchId], { cwd: dir, env })).code, 0);

  // The server's own engine runner takes the same trainer's job when told to use the engine.
  const engine = await runSvc(["start", "--backend", "engine"], { cwd: dir, env, timeoutMs: 120_000 });
  assert.equal(engine.code, 0, engine.stderr);
  const engineId = /^job (\S+) submitted/m.exec(engine.stdout)![1];
  const done = await runSvc(["jobs", "show", engineId], { cwd: dir, env });
  assert.match(done.stdout, /^status {6}completed$/m);
  assert.match(done.stdout, /^backend {5}engine$/m);
  assert.doesNotMatch(done.stdout, /^waiting/m);
});

test("a backend that is not auto, engine or torch is refused by name", async () => {
  const dir = await project("");
  const bad = await runSvc(["start", "--backend", "tpu"], { cwd: dir, env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--backend must be auto, engine or torch \(got "tpu"\)/);
  assert.throws(
    () =>
      createTrainer({
        name: "x",
        model: "svc/pico-llama",
        dataset: { type: "inline", rows: [{ messages: [{ role: "user", content: "q" }] }] },
        backend: "tpu" as "torch",
      }),
    /createTrainer: backend: expected "auto", "engine" or "torch", got "tpu"/,
  );
});
