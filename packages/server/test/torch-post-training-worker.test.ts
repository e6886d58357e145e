// Methods "dpo" and "grpo" on the torch backend through `svc server` and
// `svc worker --backend torch` (Python on the CPU): a DPO job trains with the
// engine's events (preference figures every step, eval figures at the end),
// checkpoints and a final adapter; a GRPO job rewarded by a string_check grader
// samples in Python, is graded by the worker, logs the reward figures and
// samples, and after its worker is killed with SIGKILL another one resumes it
// from its last checkpoint; a GRPO job rewarded by its trainer's code (this test
// answering the scoring routes, as svc start does) trains on the torch worker too,
// pauses when its scorer is gone and resumes; a score_model grader is judged there.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { needs } from "@svc/engine/testing";
import { call, createJob, until, uploadDataset, waitForExit } from "./harness.js";
import {
  checkpointSteps,
  completedTorchLogs,
  framesText,
  hasTorch,
  TORCH_PYTHON,
  torchCluster,
  trainingLogs,
} from "./torch-harness.js";

const PYTHON = TORCH_PYTHON;
// A job whose trainer's scorer stops claiming pauses after this long (the server and workers this file starts).
process.env.SVC_SCORER_TIMEOUT_MS ??= "3000";
// GRPO samples from the bundled model, whose English completions sometimes say " the " and sometimes not
const PICO = "svc/pico-llama";
const PICO_DIR = join(fileURLToPath(new URL("../../../..", import.meta.url)), "models/pico-llama");
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
const COLOURS = ["red", "green", "blue"];
const preferenceRows = Array.from({ length: 12 }, (_, i) => ({
  input: { messages: [{ role: "user", content: `Name colour ${i}.` }] },
  preferred_output: [{ role: "assistant", content: COLOURS[i % 3] }],
  non_preferred_output: [{ role: "assistant", content: `no ${i}` }],
}));
const promptRows = ["the sea", "a dog", "the rain", "a city", "the king", "a tree"].map((topic) => ({
  messages: [{ role: "user", content: `Write about ${topic}.` }],
  word: " the ",
}));
const GRADER = {
  type: "string_check",
  name: "says the",
  operation: "like",
  input: "{{sample.output_text}}",
  reference: "{{item.word}}",
};

describe("methods dpo and grpo on the torch backend through svc server", {
  skip: !hasTorch && needs("torch", `${PYTHON} has no torch`),
}, () => {
  const cluster = torchCluster("torch-post", { models: async () => [`${PICO}=${PICO_DIR}`] });
  const job = async (jobId: string) =>
    (await call(cluster.server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: cluster.id.token })).body.job;
  const upload = (rows: unknown[], name: string) =>
    uploadDataset(cluster.server.apiUrl, cluster.id, jsonl(rows), name);

  it("a DPO job trains on the torch worker with the preference figures, eval figures and checkpoints", async () => {
    await cluster.startWorker(PYTHON);
    const dataset = await upload(preferenceRows, "pairs.jsonl");
    const created = await createJob(
      cluster.server.apiUrl,
      cluster.id,
      dataset.id,
      { maxSteps: 4, saveSteps: 2, labelSmoothing: 0.1, learningRate: 5e-3 },
      { method: "dpo", backend: "torch", evalFraction: 0.25 },
    );
    assert.equal((await job(created.id)).backend, "torch");
    const frames = await cluster.eventsUntilEnd(created.id, 120_000);
    const logs = completedTorchLogs(frames, 4);
    for (const log of logs) {
      const p = log.rewards;
      assert.ok(
        p && [p.chosenReward, p.rejectedReward, p.margin, p.accuracy].every(Number.isFinite),
        JSON.stringify(log),
      );
    }
    assert.equal(logs[0].rewards.accuracy, 0.5, "a fresh adapter ties every pair");
    const last = logs.at(-1);
    assert.ok(last.evalRewards && last.evalLoss === last.evalRewards.loss, JSON.stringify(last));
    assert.deepEqual(checkpointSteps(frames), [2, 4]);
    const artifacts = (
      await call(cluster.server.apiUrl, "GET", `/v1/jobs/${created.id}/artifacts`, {
        token: cluster.id.token,
      })
    ).body.artifacts as { kind: string }[];
    assert.ok(
      artifacts.some((a) => a.kind === "final"),
      JSON.stringify(artifacts),
    );
  });

  it("a GRPO job samples in Python, is graded by the worker, evaluates its eval set, and resumes after its worker is killed", async () => {
    const dataset = await upload(promptRows, "prompts.jsonl");
    const heldOut = await upload(
      ["a horse", "the moon"].map((topic) => ({
        messages: [{ role: "user", content: `Write about ${topic}.` }],
        word: " the ",
      })),
      "held-out.jsonl",
    );
    const created = await createJob(
      cluster.server.apiUrl,
      cluster.id,
      dataset.id,
      {
        maxSteps: 16,
        saveSteps: 2,
        evalSteps: 8,
        evalGenerations: 2,
        batchSize: 2,
        numGenerations: 4,
        maxCompletionTokens: 8,
        beta: 0.04,
      },
      {
        method: "grpo",
        backend: "torch",
        graders: [{ grader: GRADER }],
        baseModel: PICO,
        evalDatasetId: heldOut.id,
      },
    );
    assert.equal((await job(created.id)).backend, "torch");
    await cluster.waitForEvent(created.id, "checkpoint.saved");
    for (const w of cluster.workers) {
      w.proc.kill("SIGKILL");
      await waitForExit(w.proc);
    }
    await cluster.startWorker(PYTHON);
    const frames = await cluster.eventsUntilEnd(created.id, 240_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames).slice(-2000));
    const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
    assert.equal(starts.length, 2);
    assert.ok(starts[1].resumedFromStep >= 2, JSON.stringify(starts[1]));
    const logs = trainingLogs(frames);
    // each step logged once per run that reached it; the resumed run goes on to step 16
    assert.equal(logs.at(-1).step, 16);
    for (const log of logs) {
      const g = log.grpo;
      assert.equal(log.backend, "torch");
      assert.ok(g.reward >= 0 && g.reward <= 1 && Number.isFinite(g.rewardStd), JSON.stringify(log));
      assert.ok(g.rewards["says the"] >= 0 && g.completionLength > 0 && g.completionLength <= 8);
      assert.ok(g.kl >= 0 && g.zeroAdvantageFraction >= 0 && g.zeroAdvantageFraction <= 1);
      assert.ok(g.samples.length > 0 && typeof g.samples[0].completion === "string", JSON.stringify(g));
      assert.ok(
        g.seconds.generation > 0 && g.seconds.scoring >= 0 && g.seconds.update >= 0,
        JSON.stringify(g),
      );
    }
    assert.equal(logs.find((l) => l.step === 1)?.grpo.kl ?? 0, 0, "step 1's policy is the reference");
    assert.ok(
      logs.some((l) => l.grpo.zeroAdvantageFraction < 1 && l.grpo.kl > 0),
      "some steps had groups that disagreed, and the policy moved from the reference",
    );
    assert.ok(checkpointSteps(frames).includes(16), JSON.stringify(checkpointSteps(frames)));
    // the eval set at steps 8 and 16: 2 prompts x evalGenerations 2, scored by the same grader
    for (const log of logs) {
      if (log.step % 8 !== 0) assert.equal(log.evalGrpo, null, JSON.stringify(log));
      else {
        const e = log.evalGrpo;
        assert.ok(
          e && e.reward >= 0 && e.reward <= 1 && e.rewards["says the"] === e.reward,
          JSON.stringify(log),
        );
        assert.ok(e.completionLength > 0 && e.completionLength <= 8, JSON.stringify(e));
      }
    }
    assert.ok(
      logs.some((l) => l.step === 16 && l.evalGrpo),
      "the last step evaluates",
    );
    assert.equal((await job(created.id)).status, "completed");
  });

  /** This test as the trainer's scorer, as svc start is: each completion's reward is its length. */
  const scoreUntilEnd = async (jobId: string) => {
    const api = (path: string, json: unknown) =>
      call(cluster.server.apiUrl, "POST", `${path}?${cluster.id.scope}`, { token: cluster.id.token, json });
    const scored: number[] = [];
    for (;;) {
      const got = await api(`/v1/jobs/${jobId}/scoring/claim`, {});
      if (got.status === 409) return scored;
      if (got.status === 204) continue;
      assert.equal(got.status, 200, JSON.stringify(got.body));
      const rewards = got.body.batch.items.map((item: { completion: string }) => [item.completion.length]);
      scored.push(got.body.batch.step);
      assert.equal((await api(`/v1/jobs/${jobId}/scoring/${got.body.batch.id}`, { rewards })).status, 200);
    }
  };

  it("a GRPO job rewarded by its trainer's code (the scoring routes) trains on the torch worker", async () => {
    const dataset = await upload(promptRows, "rewarded.jsonl");
    const created = await createJob(
      cluster.server.apiUrl,
      cluster.id,
      dataset.id,
      { maxSteps: 3, batchSize: 2, numGenerations: 2, maxCompletionTokens: 4, saveSteps: 3 },
      { method: "grpo", backend: "torch", rewards: [{ name: "length" }] },
    );
    assert.deepEqual(await scoreUntilEnd(created.id), [1, 2, 3]);
    const frames = await cluster.eventsUntilEnd(created.id, 60_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames).slice(-2000));
    const logs = trainingLogs(frames);
    assert.deepEqual(
      logs.map((l) => [l.step, l.backend, typeof l.grpo.rewards.length]),
      [
        [1, "torch", "number"],
        [2, "torch", "number"],
        [3, "torch", "number"],
      ],
    );
  });

  it("a torch GRPO job with a score_model grader is judged by the worker (the judge's model loaded there)", async () => {
    const dataset = await upload(promptRows, "judged.jsonl");
    const judge = {
      type: "score_model",
      name: "judge",
      model: PICO,
      input: [{ role: "user", content: "Score this reply from 0 to 1: {{sample.output_text}}" }],
      // the bundled model is no judge: any number it gives is in range, so the job trains on its scores
      range: [-1e12, 1e12],
    };
    const created = await createJob(
      cluster.server.apiUrl,
      cluster.id,
      dataset.id,
      { maxSteps: 2, batchSize: 2, numGenerations: 2, maxCompletionTokens: 4, saveSteps: 2 },
      { method: "grpo", backend: "torch", graders: [{ grader: judge }] },
    );
    const frames = await cluster.eventsUntilEnd(created.id, 120_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames).slice(-2000));
    for (const log of trainingLogs(frames)) {
      const score = log.grpo.rewards.judge;
      assert.ok(Number.isFinite(score), JSON.stringify(log.grpo));
    }
  });

  it("a torch GRPO job whose trainer's scorer is gone pauses (scorer_gone) and resumes when it claims again", async () => {
    const dataset = await upload(promptRows, "paused.jsonl");
    const created = await createJob(
      cluster.server.apiUrl,
      cluster.id,
      dataset.id,
      { maxSteps: 2, batchSize: 2, numGenerations: 2, maxCompletionTokens: 4, saveSteps: 2 },
      { method: "grpo", backend: "torch", rewards: [{ name: "length" }] },
    );
    // nobody claims: the job pauses with its reason instead of training on missing rewards
    await until(
      "the job to pause for its scorer",
      async () => (await job(created.id)).status === "paused",
      60_000,
    );
    assert.equal((await job(created.id)).pausedReason, "scorer_gone");
    assert.deepEqual(await scoreUntilEnd(created.id), [1, 2]);
    const frames = await cluster.eventsUntilEnd(created.id, 60_000);
    const events = frames.map((f) => f.event);
    assert.ok(events.includes("training.paused") && events.includes("training.resumed"), framesText(frames));
    assert.equal(events.at(-2), "training.completed", framesText(frames).slice(-2000));
    assert.ok(!events.includes("training.failed"));
    assert.deepEqual(
      trainingLogs(frames).map((l) => l.step),
      [1, 2],
    );
  });
});
