// The post-training templates, as a user runs them: `svc init --template
// <name>` scaffolds the project and `svc start` trains it, unchanged, on the
// bundled svc/pico-llama through a real `svc server`. reply-tone (DPO): the
// step lines carry the held-out preference figures, and held-out preference
// accuracy rises from chance (the reference: every reward 0, a tie counts 0.5)
// to a clearly higher figure. full-sentences (GRPO, a multi grader and a
// TypeScript reward run by svc start): the grader's share and the held-out
// mean reward rise.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, startTestServer, type TestServer, tempDir } from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;
let home: string;

before(async () => {
  home = await tempDir("post-training-home");
  server = await startTestServer({ home, args: ["--job-poll-ms", "100"] });
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

test("svc init --list shows the DPO and GRPO templates", async () => {
  const list = await runSvc(["init", "--list"], { cwd: home, env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^reply-tone +support reply: .*\(DPO\)$/m);
  assert.match(list.stdout, /^full-sentences +writing prompt .*\(GRPO\)$/m);
});

test("reply-tone: svc start trains DPO and held-out preference accuracy rises from chance", async () => {
  const dir = join(await tempDir("post-training"), "tone");
  const init = await runSvc(["init", dir, "--template", "reply-tone"], { cwd: home, env });
  assert.equal(init.code, 0, init.stderr);
  assert.match(await readFile(join(dir, "src", "svc", "index.ts"), "utf8"), /method: "dpo"/);
  const rows = (await readFile(join(dir, "data", "train.jsonl"), "utf8")).trim().split("\n");
  assert.equal(rows.length, 160);
  assert.ok(JSON.parse(rows[0]).non_preferred_output, "rows are preference pairs in OpenAI's form");

  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 600_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}\n${server.log()}`);
  assert.match(run.stdout, /^job \S+ submitted: reply-tone on svc\/pico-llama$/m);
  // the dataset profile describes chat rows: a DPO trainer's pairs get none (no "failed" line either)
  assert.doesNotMatch(run.stdout, /^dataset profile/m);
  assert.match(run.stdout, /^started: 60 steps, 160 train \/ 32 eval examples, base model svc\/pico-llama/m);
  const evals = [
    ...run.stdout.matchAll(/^step (\d+)\/60 .*evalPreferenceAccuracy=([\d.]+) evalMargin=(-?[\d.]+)$/gm),
  ].map((m) => ({ step: Number(m[1]), accuracy: Number(m[2]), margin: Number(m[3]) }));
  assert.deepEqual(
    evals.map((e) => e.step),
    [10, 20, 30, 40, 50, 60],
  );
  const last = evals.at(-1) as (typeof evals)[number];
  console.log(
    `# reply-tone held-out preference accuracy: 0.5 at the reference (step 0), ${evals
      .map((e) => `${e.accuracy} at step ${e.step}`)
      .join(", ")}; margin ${evals[0].margin} -> ${last.margin}`,
  );
  // measured 0.7813 at step 60 (curt replies are told apart at once, off-topic ones only in part)
  assert.ok(last.accuracy >= 0.7, `held-out preference accuracy ${last.accuracy}`);
  assert.ok(last.margin > 1, `held-out margin ${last.margin}`);
  const id = (/^done: job (\S+) \(adapter: final\)$/m.exec(run.stdout) as RegExpExecArray)[1];
  const shown = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(shown.job.method, "dpo");
  assert.equal(shown.job.hyperparameters.beta, 0.1);
});

test("full-sentences: svc start trains GRPO with its grader and TypeScript reward; the rewards rise", async () => {
  const dir = join(await tempDir("post-training"), "sentences");
  const init = await runSvc(["init", dir, "--template", "full-sentences"], { cwd: home, env });
  assert.equal(init.code, 0, init.stderr);
  const source = await readFile(join(dir, "src", "svc", "index.ts"), "utf8");
  assert.match(source, /method: "grpo"/);
  assert.match(source, /noLoop: \(\{ completion \}\) =>/);

  const run = await runSvc(["start"], { cwd: dir, env, timeoutMs: 600_000 });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}\n${server.log()}`);
  assert.match(run.stdout, /^started: 20 steps, 48 train \/ 12 eval examples, base model svc\/pico-llama/m);
  assert.doesNotMatch(run.stdout, /^dataset profile/m);
  const steps = [
    ...run.stdout.matchAll(
      /^step (\d+)\/20 .*reward=([\d.]+) sentence=([\d.]+) noLoop=([\d.]+)(?: evalReward=([\d.]+))?$/gm,
    ),
  ].map((m) => ({ step: Number(m[1]), sentence: Number(m[3]), noLoop: Number(m[4]), evalReward: m[5] }));
  assert.equal(steps.length, 20, run.stdout);
  const evals = steps.filter((s) => s.evalReward !== undefined).map((s) => [s.step, Number(s.evalReward)]);
  assert.deepEqual(
    evals.map(([step]) => step),
    [5, 10, 15, 20],
  );
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = mean(steps.slice(0, 3).map((s) => s.sentence));
  const last = mean(steps.slice(-3).map((s) => s.sentence));
  console.log(
    `# full-sentences: grader share ${first.toFixed(3)} (steps 1-3) -> ${last.toFixed(3)} (steps 18-20); ` +
      `held-out mean reward ${evals.map(([step, r]) => `${r} at step ${step}`).join(", ")}`,
  );
  // measured (seed 6) in fp32 0.104 -> 0.979 and held-out 0.75 (step 5) -> 1.5 (step 20); in bf16 0.094 ->
  // 0.948 and 0.9167 -> 1.4167 (the precision is the CPU's: training-precision.md). Over seeds 1-7 the
  // share rose 0.25-0.88 (docs/post-training.md#templates).
  assert.ok(last > first + 0.3, `grader share ${first} -> ${last}`);
  assert.ok(evals[3][1] > evals[0][1] + 0.15, `held-out mean reward ${evals[0][1]} -> ${evals[3][1]}`);
  assert.ok(
    steps.every((s) => s.noLoop >= 0.9),
    "no step's replies fell into loops (the trainer's reward function)",
  );
  const id = (/^done: job (\S+) \(adapter: final\)$/m.exec(run.stdout) as RegExpExecArray)[1];
  const shown = JSON.parse((await runSvc(["jobs", "show", id, "--json"], { cwd: dir, env })).stdout);
  assert.equal(shown.job.method, "grpo");
});
