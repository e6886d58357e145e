// Method "grpo" through `svc server` on the bundled svc/pico-llama: a prompt
// dataset uploads (its rows carry the word the grader reads), a GRPO job
// rewarded by a string_check grader ({{sample.output_text}} like
// {{item.word}}) trains from the base model, its training.log frames carry the
// reward figures and samples, and the mean reward rises, on the training
// prompts and on held-out prompts sampled through /v1/inference/chat before
// and after; a GRPO job started from a short SFT run's adapter holds it as its
// frozen reference (KL exactly 0 at step 1) and raises the held-out reward
// beyond the SFT adapter's. Bad graders, stray settings and mismatched datasets are refused
// with the field named (docs/post-training.md#grpo). On SQLite and PostgreSQL.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  call,
  chatJsonl,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  uploadDataset,
} from "./harness.js";

const PICO = "svc/pico-llama";
const PICO_DIR = join(fileURLToPath(new URL("../../../..", import.meta.url)), "models/pico-llama");
const WORD = " the ";
const TOPICS = [
  "the sea",
  "a dog",
  "the king",
  "a city",
  "the rain",
  "a ship",
  "the war",
  "a tree",
  "the road",
  "a song",
  "the sun",
  "a house",
];
const HELD_OUT = ["a horse", "the moon", "a river", "the night"];
const row = (topic: string) => ({
  messages: [{ role: "user", content: `Write about ${topic}.` }],
  word: WORD,
});
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
const GRADER = {
  type: "string_check",
  name: "says the",
  operation: "like",
  input: "{{sample.output_text}}",
  reference: "{{item.word}}",
};
const SAMPLES = 8;
const MAX_TOKENS = 12;

for (const backend of ["sqlite", "postgres"] as const)
  describe(`method grpo through svc server (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let train: { id: string; rows: number };
    const postJob = (body: Record<string, unknown>) =>
      call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: { name: "grpo run", baseModel: PICO, ...body },
      });
    /** Mean reward of held-out prompts sampled SAMPLES times each (seeded), under the adapter or the base. */
    const heldOutReward = async (adapter: unknown) => {
      let hits = 0;
      for (const topic of HELD_OUT)
        for (let seed = 0; seed < SAMPLES; seed++) {
          const reply = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
            token: id.token,
            json: {
              ...(adapter ? { adapter } : { baseModel: PICO }),
              messages: row(topic).messages,
              temperature: 1,
              maxTokens: MAX_TOKENS,
              seed,
            },
          });
          assert.equal(reply.status, 200, JSON.stringify(reply.body));
          if ((reply.body.choices[0].message.content as string).includes(WORD)) hits++;
        }
      return hits / (HELD_OUT.length * SAMPLES);
    };
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      train = await uploadDataset(server.apiUrl, id, jsonl(TOPICS.map(row)), "prompts.jsonl");
    });
    after(async () => server?.cleanup());

    it("a GRPO job with a string_check grader raises the mean reward, logging its figures every step", async () => {
      assert.equal(train.rows, 12);
      const created = await postJob({
        datasetId: train.id,
        method: "grpo",
        graders: [{ grader: GRADER, weight: 1 }],
        hyperparameters: {
          lora: { r: 8, alpha: 16 },
          maxSteps: 20,
          batchSize: 4,
          learningRate: 5e-3,
          seed: 5,
          numGenerations: 8,
          maxCompletionTokens: MAX_TOKENS,
          temperature: 1,
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const job = created.body.job;
      assert.equal(job.method, "grpo");
      assert.equal(job.backend, "engine");
      assert.equal(job.hyperparameters.numGenerations, 8);
      const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 300_000);
      const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      assert.ok(
        events.some((e) => e.type === "training.completed"),
        JSON.stringify(events.at(-2)),
      );
      const logs = events.filter((e) => e.type === "training.log");
      assert.equal(logs.length, 20);
      for (const log of logs) {
        const g = log.grpo;
        for (const key of [
          "reward",
          "rewardStd",
          "completionLength",
          "zeroAdvantageFraction",
          "clipFraction",
        ])
          assert.equal(typeof g[key], "number", `step ${log.step} grpo.${key}`);
        assert.deepEqual(Object.keys(g.rewards), ["says the"]);
        assert.equal(g.kl, null, "beta 0: no KL");
        assert.equal(g.samples.length, 4);
        assert.equal(typeof g.samples[0].completion, "string");
        assert.ok(g.seconds.generation > 0 && g.seconds.update >= 0);
      }
      const mean = (list: typeof logs) => list.reduce((s, l) => s + l.grpo.reward, 0) / list.length;
      const first = mean(logs.slice(0, 3));
      const last = mean(logs.slice(-3));
      const series = logs.map((l) => `${l.step}:${l.grpo.reward.toFixed(2)}`).join(" ");
      console.log(`# ${backend}: mean reward by step: ${series}`);
      const before = await heldOutReward(null);
      const afterward = await heldOutReward({ kind: "final", jobId: job.id });
      console.log(
        `# ${backend}: training mean reward ${first.toFixed(3)} (steps 1-3) -> ${last.toFixed(3)} (steps 18-20); held-out (${HELD_OUT.length} prompts x ${SAMPLES}) ${before.toFixed(3)} base -> ${afterward.toFixed(3)} adapter`,
      );
      assert.ok(last > first + 0.3, `training reward ${first} -> ${last}`);
      assert.ok(afterward > before + 0.3, `held-out reward ${before} -> ${afterward}`);
    });

    it("a GRPO job started from a short SFT run holds that adapter as its reference and raises the reward further", async () => {
      // half the SFT answers say " the ": the SFT adapter answers in that style some of the time
      const answers = ["It is near the water.", "It is big and old.", "I saw the light.", "It was fine."];
      const sftRows = TOPICS.map((topic, i) => ({
        messages: [...row(topic).messages, { role: "assistant", content: answers[i % 4] }],
      }));
      const sftSet = await uploadDataset(server.apiUrl, id, jsonl(sftRows), "sft.jsonl");
      const sft = await postJob({
        datasetId: sftSet.id,
        hyperparameters: {
          lora: { r: 8, alpha: 16 },
          maxSteps: 6,
          batchSize: 4,
          learningRate: 3e-3,
          seed: 5,
        },
      });
      assert.equal(sft.status, 201, JSON.stringify(sft.body));
      const sftEvents = await eventsUntilEnd(server.apiUrl, id.token, sft.body.job.id, 300_000);
      assert.ok(sftEvents.some((f) => f.event === "training.completed"));
      const startAdapter = { kind: "final", jobId: sft.body.job.id };
      const created = await postJob({
        datasetId: train.id,
        method: "grpo",
        startAdapter,
        graders: [{ grader: GRADER }],
        hyperparameters: {
          maxSteps: 12,
          batchSize: 4,
          learningRate: 5e-3,
          seed: 5,
          numGenerations: 8,
          maxCompletionTokens: MAX_TOKENS,
          beta: 0.04,
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(created.body.job.startAdapter, startAdapter);
      assert.deepEqual(created.body.job.hyperparameters.lora.r, 8, "the LoRA shape is the start adapter's");
      const frames = await eventsUntilEnd(server.apiUrl, id.token, created.body.job.id, 300_000);
      const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      assert.ok(
        events.some((e) => e.type === "training.completed"),
        JSON.stringify(events.at(-2)),
      );
      const logs = events.filter((e) => e.type === "training.log");
      // step 1 samples and trains the start adapter itself: the policy is the reference exactly
      assert.equal(logs[0].grpo.kl, 0);
      // later steps' policy has moved from it; a step whose every group scored alike trains nothing and
      // reports 0 (which step that is depends on the run's rounding: fp32 and bf16 differ), so the last
      // step that trained is the one to look at
      const trained = logs.slice(1).filter((l) => l.grpo.zeroAdvantageFraction < 1);
      assert.ok(trained.length > 0, "no step after the first had an advantage");
      assert.ok(trained.at(-1).grpo.kl > 0, `KL at step ${trained.at(-1).step}: ${trained.at(-1).grpo.kl}`);
      const base = await heldOutReward(null);
      const fromSft = await heldOutReward(startAdapter);
      const after = await heldOutReward({ kind: "final", jobId: created.body.job.id });
      console.log(
        `# ${backend}: from SFT: step rewards ${logs.map((l) => l.grpo.reward.toFixed(2)).join(" ")}; KL ${logs.map((l) => l.grpo.kl.toFixed(4)).join(" ")}; zero-advantage fraction ${logs.map((l) => l.grpo.zeroAdvantageFraction.toFixed(2)).join(" ")}; held-out base ${base.toFixed(3)}, SFT ${fromSft.toFixed(3)}, SFT + GRPO ${after.toFixed(3)}`,
      );
      assert.ok(after > fromSft + 0.2, `held-out reward from SFT ${fromSft} -> ${after}`);
    });

    it("a grader that cannot grade a completion fails the job at step 1, naming the row and grader; nothing is trained", async () => {
      // 0 / 0: a formula that is not finite on every completion (both checks fail on pico-llama's text)
      const divide = {
        type: "multi",
        name: "ratio",
        graders: {
          a: {
            type: "string_check",
            name: "a",
            operation: "eq",
            input: "{{sample.output_text}}",
            reference: "zzzz",
          },
          b: {
            type: "string_check",
            name: "b",
            operation: "eq",
            input: "{{sample.output_text}}",
            reference: "qqqq",
          },
        },
        calculate_output: "a / b",
      };
      const created = await postJob({
        datasetId: train.id,
        method: "grpo",
        graders: [{ grader: divide }],
        hyperparameters: {
          lora: { r: 4, alpha: 8 },
          maxSteps: 3,
          batchSize: 2,
          numGenerations: 2,
          maxCompletionTokens: 4,
          saveSteps: 1,
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const frames = await eventsUntilEnd(server.apiUrl, id.token, created.body.job.id, 120_000);
      const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
      const failed = events.find((e) => e.type === "training.failed");
      assert.ok(failed, JSON.stringify(events.at(-2)));
      assert.match(
        failed.error,
        /step 1: scoring failed: row \d+: graders\[0\] \("ratio"\) could not grade a completion/,
      );
      assert.equal(
        events.filter((e) => e.type === "training.log" || e.type === "checkpoint.saved").length,
        0,
      );
      const job = await call(server.apiUrl, "GET", `/v1/jobs/${created.body.job.id}`, { token: id.token });
      assert.equal(job.body.job.status, "failed");
    });

    it("graders are checked at job creation with the field named; GRPO settings need method grpo", async () => {
      const chat = await uploadDataset(server.apiUrl, id, chatJsonl(8));
      const refused = async (body: Record<string, unknown>, message: RegExp) => {
        const reply = await postJob({ hyperparameters: { lora: { r: 4, alpha: 8 }, maxSteps: 2 }, ...body });
        assert.equal(reply.status, 400, JSON.stringify(reply.body));
        assert.match(reply.body.error.message, message);
      };
      const grpo = { datasetId: train.id, method: "grpo" };
      await refused({ ...grpo }, /"graders": method "grpo" needs at least one grader/);
      await refused(
        { ...grpo, graders: [{ grader: { ...GRADER, reference: "{{item.answer}}" } }] },
        /graders\[0\]\.grader\.reference.*item\.answer.*first row/,
      );
      await refused(
        { ...grpo, graders: [{ grader: { ...GRADER, operation: "equals" } }] },
        /graders\[0\]\.grader\.operation/,
      );
      await refused(
        {
          ...grpo,
          graders: [
            {
              grader: {
                type: "score_model",
                name: "judge",
                model: "svc/no-such-model",
                input: [{ role: "user", content: "rate" }],
              },
            },
          ],
        },
        /"graders\[0\]\.grader\.model": svc\/no-such-model is not a base model this server serves/,
      );
      await refused({ ...grpo, graders: [{ grader: GRADER, weight: 1e9 }] }, /graders\[0\]\.weight/);
      await refused(
        {
          ...grpo,
          graders: [{ grader: GRADER }],
          hyperparameters: { lora: { r: 4, alpha: 8 }, numGenerations: 1 },
        },
        /"hyperparameters\.numGenerations"/,
      );
      await refused(
        {
          ...grpo,
          graders: [{ grader: GRADER }],
          hyperparameters: { lora: { r: 4, alpha: 8 }, loss: "simpo" },
        },
        /"hyperparameters\.loss" is a DPO setting/,
      );
      await refused(
        { ...grpo, graders: [{ grader: GRADER }], evalFraction: 0.2 },
        /"evalFraction": method "grpo" takes its eval set as "evalDatasetId"/,
      );
      await refused(
        {
          ...grpo,
          graders: [{ grader: GRADER }],
          hyperparameters: { lora: { r: 4, alpha: 8 }, evalGenerations: 2 },
        },
        /"hyperparameters\.evalGenerations" samples the eval set: give "evalDatasetId" too/,
      );
      await refused(
        { datasetId: chat.id, method: "grpo", graders: [{ grader: GRADER }] },
        /"datasetId": method "grpo" trains on prompts/,
      );
      await refused(
        { datasetId: train.id },
        /"datasetId": dataset .* holds GRPO prompts; train it with "method": "grpo"/,
      );
      await refused(
        { datasetId: chat.id, hyperparameters: { lora: { r: 4, alpha: 8 }, numGenerations: 4 } },
        /"hyperparameters\.numGenerations" is a GRPO setting/,
      );
      await refused({ datasetId: chat.id, graders: [{ grader: GRADER }] }, /"graders" reward a GRPO job/);
      const ok = await postJob({
        ...grpo,
        graders: [{ grader: GRADER }],
        dryRun: true,
        hyperparameters: { lora: { r: 4, alpha: 8 }, beta: 0 },
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.deepEqual(ok.body.job.hyperparameters.graders, [{ grader: GRADER }]);
    });

    it("a malformed prompt row is refused at upload, naming the line and field", async () => {
      const bad = `${jsonl(TOPICS.map(row))}${JSON.stringify({ messages: [{ role: "user", content: "x" }], response_format: { type: "yaml" } })}\n`;
      const reply = await call(server.apiUrl, "POST", `/v1/datasets?${id.scope}&name=bad.jsonl`, {
        token: id.token,
        body: bad,
        headers: { "content-type": "application/x-ndjson" },
      });
      assert.equal(reply.status, 400);
      assert.match(reply.body.error.message, /^bad\.jsonl line 13: "response_format\.type" must be one of/);
    });
  });
