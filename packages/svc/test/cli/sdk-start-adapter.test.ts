// The SDK's createTrainer({ startAdapter }) and trainer.pause()/resume()
// against a real `svc server`: a trainer that starts from another trainer's
// final adapter takes its LoRA shape and starts at its loss; a trainer paused
// at its first step waits as "paused", resumes, and wait() settles completed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createTrainer, openScopedSession } from "../../src/index.js";
import { cliEnv, startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
const model = TEST_MODEL as "svc/pico-llama";
const rows = Array.from({ length: 8 }, (_, i) => ({
  messages: [
    { role: "user" as const, content: `ping ${i}` },
    { role: "assistant" as const, content: `pong ${i}` },
  ],
}));
const dataset = { type: "inline" as const, rows };

before(async () => {
  const home = await tempDir("sdk-start-home");
  server = await startTestModelServer(home);
  Object.assign(
    process.env,
    cliEnv(home, server.apiUrl, { SVC_PROJECT_DIR: await tempDir("sdk-start-project") }),
  );
});

after(async () => {
  await server?.stop();
});

test("a trainer from another trainer's final adapter starts at that adapter's loss, with its LoRA shape", async () => {
  const losses: number[] = [];
  const first = createTrainer({
    name: "sdk-first",
    model,
    dataset,
    lora: { r: 4, alpha: 8 },
    maxSteps: 6,
    batchSize: 8,
    learningRate: 2e-2,
    seed: 3,
    callbacks: { onLog: ({ loss }) => void (loss !== null && losses.push(loss)) },
  });
  await first.wait();
  let startedWith: unknown = null;
  let lora: unknown = null;
  const next: number[] = [];
  const second = createTrainer({
    name: "sdk-second",
    model,
    dataset,
    maxSteps: 1,
    batchSize: 8,
    seed: 3,
    startAdapter: { kind: "final", jobId: first.jobId! },
    callbacks: {
      onStarted: ({ job }) => {
        startedWith = job.startAdapter;
        lora = job.hyperparameters.lora;
      },
      onLog: ({ loss }) => void (loss !== null && next.push(loss)),
    },
  });
  await second.wait();
  assert.deepEqual(startedWith, { kind: "final", jobId: first.jobId });
  assert.equal((lora as { r: number }).r, 4, "the adapter's rank, though the trainer set no lora");
  // Its first loss is below every loss the first trainer logged: those were taken before each update.
  assert.ok(
    next[0] < Math.min(...losses),
    `first loss ${next[0]} vs the first trainer's ${losses.join(", ")}`,
  );
  assert.throws(
    () =>
      createTrainer({ name: "x", model, dataset, startAdapter: { kind: "checkpoint", jobId: "j", step: 0 } }),
    /startAdapter\.step/,
  );
});

test("trainer.pause() pauses the job and trainer.resume() lets wait() settle completed", async () => {
  let paused: Promise<void> | null = null;
  const trainer = createTrainer({
    name: "sdk-pause",
    model,
    dataset,
    maxSteps: 200,
    batchSize: 1,
    saveSteps: 1000,
    callbacks: {
      onLog: () => {
        paused ??= trainer.pause();
      },
    },
  });
  const done = trainer.wait();
  const { scoped } = await openScopedSession();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const id = trainer.jobId;
    if (id && (await scoped.getJob(id)).status === "paused") break;
    assert.ok(Date.now() < deadline, "the job did not pause");
    await new Promise((r) => setTimeout(r, 100));
  }
  await paused;
  await trainer.resume();
  const result = await done;
  assert.equal(result.job.status, "completed");
});
