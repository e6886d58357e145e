// GRPO rewards written in TypeScript in the project's trainer
// (docs/post-training.md#rewards-in-typescript), through `svc start` and a
// real `svc server`: the trainer's process runs the reward functions, the job
// completes, and each step line names every reward's mean (createTrainer's
// graders too); `svc start` killed with SIGKILL mid-job leaves the job paused
// with reason scorer_gone, and `svc start --attach <job>` resumes it to the
// end; a reward that throws, and one that returns NaN, fail the job naming
// the step, row and reward, with nothing trained on that step.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  cliEnv,
  createTestModel,
  runSvc,
  SVC_BIN,
  startProcess,
  startTestServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;
const cleanups: (() => unknown)[] = [];

before(async () => {
  const home = await tempDir("rewards-home");
  const model = await createTestModel();
  server = await startTestServer({
    home,
    args: ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`, "--job-poll-ms", "100"],
    env: { SVC_SCORER_TIMEOUT_MS: "3000" },
  });
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  for (const c of cleanups.reverse()) await c();
  await server?.stop();
});

const ROWS = ["red", "green", "blue", "gold"].map((color) => ({
  messages: [{ role: "user", content: `Name a thing that is ${color}.` }],
  color,
}));

/** A project whose GRPO trainer has `rewards` (TypeScript source, or none) and a string_check grader. */
async function project(rewards: string | null, steps = 3, method: string | null = "grpo"): Promise<string> {
  const dir = await tempDir("rewards-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = ${JSON.stringify(ROWS)};
export default createSvc({
  trainer: createTrainer({
    name: "rewards",
    model: "${TEST_MODEL}" as "svc/pico-llama",
    ${method ? `method: "${method}",` : ""}
    dataset: { type: "inline", rows },
    ${rewards ? `rewards: ${rewards},` : ""}
    graders: [{ grader: { type: "string_check", name: "says_color", operation: "like", input: "{{sample.output_text}}", reference: "{{item.color}}" } }],
    lora: { r: 4, alpha: 8 },
    batchSize: 2,
    maxSteps: ${steps},
    saveSteps: 1,
    numGenerations: 2,
    maxCompletionTokens: 4,
    seed: 2,
  }),
});
`,
  );
  return dir;
}

const jobIdOf = (out: string) => /^job (\S+) submitted/m.exec(out)![1];

test("a GRPO job rewarded by TypeScript functions completes through svc start, each step naming every reward's mean", async () => {
  const dir = await project(`{
      short: ({ completion }) => -completion.length,
      asks: async ({ prompt, row, rowNumber }) => (prompt.includes(String(row.color)) && rowNumber >= 1 ? 1 : 0),
    }`);
  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 180_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const id = jobIdOf(run.stdout);
  for (const step of [1, 2, 3]) {
    assert.match(run.stdout, new RegExp(`^scored step ${step}: 4 completions with short, asks`, "m"));
    // asks is 1 on every completion (each prompt names its row's color): its mean is exactly 1.
    assert.match(
      run.stdout,
      new RegExp(`^step ${step}/3 .*reward=\\S+ says_color=\\S+ short=-?\\d\\S* asks=1\\.0000`, "m"),
    );
  }
  assert.match(run.stdout, /^done: job \S+ \(adapter: final\)$/m);
  const shown = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(shown.job.method, "grpo");
  assert.equal(shown.job.status, "completed");
  assert.deepEqual(shown.job.hyperparameters.rewards, [{ name: "short" }, { name: "asks" }]);
  assert.equal(shown.job.hyperparameters.graders.length, 1);
});

test("svc start --method grpo trains a trainer's graders (createTrainer passes them to the job)", async () => {
  const dir = await project(null, 2, null);
  const run = await runSvc(["start", "--method", "grpo"], { cwd: dir, env, timeoutMs: 180_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  for (const step of [1, 2])
    assert.match(run.stdout, new RegExp(`^step ${step}/2 .*reward=\\S+ says_color=\\S+$`, "m"));
  assert.doesNotMatch(run.stdout, /^scored step/m, "no trainer rewards: nothing scored here");
  const shown = JSON.parse(
    (await runSvc(["jobs", "show", jobIdOf(run.stdout), "--json"], { cwd: dir, env })).stdout,
  );
  assert.equal(shown.job.method, "grpo");
  assert.equal(shown.job.hyperparameters.graders[0].grader.name, "says_color");
  assert.equal(shown.job.hyperparameters.rewards, undefined);
});

test("svc start killed mid-job: the job pauses for its scorer, and svc start --attach resumes it to the end", async () => {
  // The reward hangs at step 2 while HANG is set, so the kill lands while that step waits for its scores.
  const dir = await project(
    `[async function length({ completion, step }) {
      if (process.env.HANG && step === 2) await new Promise((r) => setTimeout(r, 600_000));
      return completion.length;
    }]`,
    4,
  );
  const first = startProcess(process.execPath, [SVC_BIN, "start"], { cwd: dir, env: { ...env, HANG: "1" } });
  cleanups.push(() => first.child.kill("SIGKILL"));
  await first.waitFor(/^step 1\/4 /m, 120_000);
  const id = jobIdOf(first.output());
  first.child.kill("SIGKILL");
  await first.done;
  let shown: { job: { status: string; pausedReason: string | null } } | null = null;
  for (let i = 0; i < 120; i++) {
    shown = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
    if (shown!.job.status === "paused") break;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(shown!.job.status, "paused");
  assert.equal(shown!.job.pausedReason, "scorer_gone");
  const text = await runSvc(["jobs", "show", id], { cwd: dir, env });
  assert.match(
    text.stdout,
    /^status {6}paused: its trainer's scorer is gone \(svc start --attach \S+ resumes it\)$/m,
  );

  const again = await runSvc(["start", "--attach", id], { cwd: dir, env, timeoutMs: 180_000 });
  assert.equal(again.code, 0, `${again.stdout}\n${again.stderr}`);
  assert.match(again.stdout, new RegExp(`^attached to job ${id}`, "m"));
  assert.match(again.stdout, /^scored step 4: 4 completions with length/m);
  assert.match(again.stdout, /^done: job /m);
  const done = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(done.job.status, "completed");
  assert.equal(done.job.pausedReason, null);
});

for (const [what, body, message] of [
  ["throws", `throw new Error("no score for " + row.color)`, /threw: no score for \w+/],
  ["returns NaN", `return Number.NaN`, /is NaN; every reward must be a finite number/],
] as const)
  test(`a reward that ${what} fails the job naming the step, row and reward; nothing is trained`, async () => {
    const dir = await project(`[function broken({ row }) { ${body} }]`);
    const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 120_000 });
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    const error = new RegExp(`step 1: scoring failed: row [1-4]: reward "broken" ${message.source}`);
    assert.match(run.stderr, error);
    const id = jobIdOf(run.stdout);
    const shown = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
    assert.equal(shown.job.status, "failed");
    assert.match(shown.job.error, error);
    assert.doesNotMatch(run.stdout, /^step 1\/3/m, "no step was logged: nothing trained");
  });
