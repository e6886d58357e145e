// A reinforcement job through OpenAI's fine-tuning API of a real `svc server`
// (loopback, SQLite and PostgreSQL), driven by the official `openai` npm client
// as a script written for OpenAI would drive it: a prompt file whose rows carry
// an extra field (answer) goes up, a `method: { type: "reinforcement" }` job
// with a string_check grader ({{sample.output_text}} like {{item.answer}})
// trains svc/pico-llama as an svc GRPO job for 4 steps, the job reads back its
// method with the grader and resolved hyperparameters, its events carry the
// reward figures, its checkpoints are read, and its ft: model answers chat
// completions. Hyperparameters svc cannot honour, an unknown one, and bad
// grader fields are refused with OpenAI's error naming the param
// (docs/openai-fine-tuning.md#methods).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TrainingLogEvent } from "@svc/wire";
import type OpenAI from "openai";
import { toFile } from "openai";
import {
  type Backend,
  call,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  serverFor,
  until,
} from "./harness.js";
import { openAiClient, PICO, PICO_DIR, refused, resultCsv } from "./openai-client.js";

const TOPICS = ["the sea", "a dog", "the king", "a city"];
const PROMPTS = `${TOPICS.map((topic) =>
  JSON.stringify({ messages: [{ role: "user", content: `Write about ${topic}.` }], answer: "e" }),
).join("\n")}\n`;
const VALID = `${["the moon", "a cat"]
  .map((topic) =>
    JSON.stringify({ messages: [{ role: "user", content: `Write about ${topic}.` }], answer: "e" }),
  )
  .join("\n")}\n`;
/** An LLM judge on the bundled model (the job's own base): its greedy answer under svc's grammar is {"result": n}. */
const JUDGE: {
  type: "score_model";
  name: string;
  model: string;
  input: { role: "system" | "user"; content: string }[];
  range: number[];
} = {
  type: "score_model",
  name: "judge",
  model: PICO,
  input: [
    { role: "system", content: 'Score the text from 0 to 1. Answer {"result": <score>}.' },
    { role: "user", content: "Text: {{sample.output_text}} (it should have an {{item.answer}})" },
  ],
  // the bundled model is no real judge: its scores are numbers, not in [0, 1]
  range: [-Number.MAX_VALUE, Number.MAX_VALUE],
};
const GRADER = {
  type: "string_check",
  name: "has an e",
  operation: "like",
  input: "{{sample.output_text}}",
  reference: "{{item.answer}}",
} as const;

type Server = Awaited<ReturnType<typeof serverFor>>;

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`OpenAI fine-tuning API: reinforcement with the official client (${backend})`, () => {
    let server: Server;
    let id: Identity;
    let client: OpenAI;
    let prompts: { id: string };
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      client = openAiClient(server, id);
      prompts = await client.files.create({
        file: await toFile(Buffer.from(PROMPTS), "prompts.jsonl"),
        purpose: "fine-tune",
      });
    });
    after(() => server?.cleanup());

    /** A finished job's training.log events, each logged sample's reward checked against graders/run's for it. */
    async function judgedLogs(jobId: string, grader: typeof JUDGE): Promise<TrainingLogEvent[]> {
      const frames = await eventsUntilEnd(server.apiUrl, id.token, jobId.slice("ftjob-".length), 60_000);
      const logs = frames
        .filter((f) => f.event === "training.log")
        .map((f) => JSON.parse(f.data) as TrainingLogEvent);
      const rows = PROMPTS.trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      let judged = 0;
      for (const log of logs)
        for (const sample of log.grpo?.samples ?? []) {
          const run = await client.fineTuning.alpha.graders.run({
            grader,
            model_sample: sample.completion,
            item: rows[sample.rowNumber - 1],
          });
          assert.equal(sample.reward, run.reward, `step ${log.step}: ${JSON.stringify(sample.completion)}`);
          assert.equal(sample.rewards.judge, run.reward);
          judged++;
        }
      assert.ok(judged >= 4, String(judged));
      return logs;
    }

    it("trains a reinforcement job with a string_check grader, follows events, reads checkpoints, chats with its ft: model", async () => {
      const hyperparameters = {
        n_epochs: 2,
        batch_size: 2,
        learning_rate_multiplier: 10,
        compute_multiplier: 0.25,
      };
      const created = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: prompts.id,
        suffix: "rft",
        seed: 5,
        method: { type: "reinforcement", reinforcement: { grader: GRADER, hyperparameters } },
      });
      assert.deepEqual(created.method, {
        type: "reinforcement",
        reinforcement: { grader: GRADER, hyperparameters },
      });

      // The same job is an svc GRPO job: one grader, 8 × 0.25 = 2 completions per prompt, 10 × 2e-4.
      const svcJob = await call(server.apiUrl, "GET", `/v1/jobs/${created.id.slice("ftjob-".length)}`, {
        token: id.token,
      });
      assert.equal(svcJob.body.job.method, "grpo");
      assert.deepEqual(svcJob.body.job.hyperparameters.graders, [{ grader: GRADER }]);
      assert.equal(svcJob.body.job.hyperparameters.numGenerations, 2);
      assert.ok(Math.abs(svcJob.body.job.hyperparameters.learningRate - 2e-3) < 1e-12);

      const job = await until(
        "the reinforcement job to finish",
        async () => {
          const j = await client.fineTuning.jobs.retrieve(created.id);
          return ["succeeded", "failed", "cancelled"].includes(j.status) && j;
        },
        240_000,
      );
      assert.equal(job.status, "succeeded", JSON.stringify(job.error));
      assert.deepEqual(job.method, created.method);
      assert.equal(job.fine_tuned_model, `ft:${PICO}:${id.orgSlug}:rft:${created.id.slice("ftjob-".length)}`);

      const events = [];
      for await (const event of client.fineTuning.jobs.listEvents(job.id, { limit: 3 })) events.push(event);
      assert.equal(events[0].message, "The job has successfully completed");
      assert.equal(events.at(-1)?.message, "Fine-tuning job started");
      const metrics = events.filter((e) => e.type === "metrics");
      assert.deepEqual(
        metrics.map((e) => (e.data as { step: number }).step),
        [4, 3, 2, 1],
      );
      for (const e of metrics) {
        const data = e.data as Record<string, number>;
        for (const key of ["train_reward_mean", "train_reward_std", "train_completion_length"])
          assert.equal(typeof data[key], "number", key);
        // a string_check scores 0 or 1: the mean and the group share lie in [0, 1]
        assert.ok(data.train_reward_mean >= 0 && data.train_reward_mean <= 1, String(data.train_reward_mean));
        assert.ok(data.train_zero_advantage_fraction >= 0 && data.train_zero_advantage_fraction <= 1);
        assert.ok(data.train_completion_length > 0);
        // beta "auto" is GRPO's 0: no reference pass, so no KL
        assert.equal("train_kl" in data, false);
      }

      const checkpoints = (await client.fineTuning.jobs.checkpoints.list(job.id)).data;
      assert.deepEqual(
        checkpoints.map((c) => c.step_number),
        [4, 2],
      );
      const atStep2 = checkpoints[1];
      assert.equal(atStep2.fine_tuned_model_checkpoint, `${job.fine_tuned_model}:ckpt-step-2`);
      assert.equal(typeof (atStep2.metrics as Record<string, number>).train_reward_mean, "number");

      // The metrics CSV: OpenAI's columns, then the reward figures, each as the step's event has it.
      const csv = await resultCsv(client, job);
      assert.deepEqual(csv.columns.slice(5), [
        "train_reward_mean",
        "train_reward_std",
        "train_kl",
        "train_completion_length",
        "train_zero_advantage_fraction",
        "train_clip_fraction",
        "valid_reward_mean",
      ]);
      for (const row of csv.rows) {
        const data = metrics.find((e) => (e.data as { step: number }).step === Number(row.step))
          ?.data as Record<string, number>;
        assert.equal(Number(row.train_reward_mean), data.train_reward_mean);
        assert.equal(Number(row.train_completion_length), data.train_completion_length);
        assert.equal(row.train_kl, "", "no KL at beta 0");
        assert.equal(row.valid_reward_mean, "", "no validation file");
      }

      for (const model of [job.fine_tuned_model as string, atStep2.fine_tuned_model_checkpoint]) {
        const completion = await client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "Write about the moon." }],
          max_tokens: 4,
        });
        assert.equal(completion.model, model);
        assert.equal(typeof completion.choices[0].message.content, "string");
      }
    });

    it("a score_model judge rewards a job with a validation file: its rewards are the judge's scores, its evals are logged", async () => {
      const validation = await client.files.create({
        file: await toFile(Buffer.from(VALID), "prompts-valid.jsonl"),
        purpose: "fine-tune",
      });
      const hyperparameters = {
        n_epochs: 1,
        batch_size: 2,
        learning_rate_multiplier: 5,
        compute_multiplier: 0.25,
        eval_interval: 1,
        eval_samples: 2,
      };
      const created = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: prompts.id,
        validation_file: validation.id,
        seed: 5,
        method: { type: "reinforcement", reinforcement: { grader: JUDGE, hyperparameters } },
      });
      assert.deepEqual(created.method?.reinforcement?.hyperparameters, hyperparameters);
      const job = await until(
        "the judged job to finish",
        async () => {
          const j = await client.fineTuning.jobs.retrieve(created.id);
          return ["succeeded", "failed", "cancelled"].includes(j.status) && j;
        },
        240_000,
      );
      assert.equal(job.status, "succeeded", JSON.stringify(job.error));

      // Every step evaluated the validation file (eval_interval 1): its mean reward is in the step's metrics.
      const metrics = [];
      for await (const e of client.fineTuning.jobs.listEvents(job.id))
        if (e.type === "metrics") metrics.push(e);
      assert.deepEqual(
        metrics.map((e) => (e.data as { step: number }).step),
        [2, 1],
      );
      for (const e of metrics)
        assert.equal(typeof (e.data as Record<string, number>).valid_reward_mean, "number");
      const [checkpoint] = (await client.fineTuning.jobs.checkpoints.list(job.id)).data;
      assert.equal(typeof (checkpoint.metrics as Record<string, number>).valid_reward_mean, "number");
      const csv = await resultCsv(client, job);
      assert.deepEqual(
        csv.rows.map((row) => Number(row.valid_reward_mean)),
        [...metrics].reverse().map((e) => (e.data as Record<string, number>).valid_reward_mean),
      );

      // The svc events: each eval's figures; each sampled completion's reward is what graders/run gives it.
      const logs = await judgedLogs(created.id, JUDGE);
      for (const log of logs) {
        assert.ok(log.evalGrpo, `step ${log.step}: an eval`);
        assert.deepEqual(Object.keys(log.evalGrpo.rewards), ["judge"]);
      }

      // A judge that is an ft: model (this job's adapter, on the job's own base): its scores too.
      const ftJudge = { ...JUDGE, model: job.fine_tuned_model as string };
      const second = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: prompts.id,
        seed: 6,
        method: {
          type: "reinforcement",
          reinforcement: {
            grader: ftJudge,
            hyperparameters: { n_epochs: 1, batch_size: 2, compute_multiplier: 0.25 },
          },
        },
      });
      const done = await until(
        "the ft:-judged job to finish",
        async () => {
          const j = await client.fineTuning.jobs.retrieve(second.id);
          return ["succeeded", "failed", "cancelled"].includes(j.status) && j;
        },
        240_000,
      );
      assert.equal(done.status, "succeeded", JSON.stringify(done.error));
      await judgedLogs(second.id, ftJudge);
    });

    it("refuses unknown and unhonourable hyperparameters and bad graders, naming the param", async () => {
      const before = (await client.fineTuning.jobs.list()).data.length;
      const create = (reinforcement: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
        client.fineTuning.jobs.create({
          model: PICO,
          training_file: prompts.id,
          method: { type: "reinforcement", reinforcement } as never,
          ...extra,
        });
      const hp = "method.reinforcement.hyperparameters";
      for (const [field, value] of [
        ["unknown_knob", 1],
        ["reasoning_effort", "low"],
        // these two set how a validation_file is evaluated: without one, refused
        ["eval_interval", 5],
        ["eval_samples", 3],
        ["compute_multiplier", 0.3],
        ["compute_multiplier", 16],
        ["n_epochs", 0],
      ] as const)
        await refused(create({ grader: GRADER, hyperparameters: { [field]: value } }), {
          status: 400,
          param: `${hp}.${field}`,
          code: "invalid_request",
        });
      const grader = "method.reinforcement.grader";
      await refused(create({ hyperparameters: {} }), { status: 400, param: grader, code: "invalid_request" });
      await refused(create({ grader: { ...GRADER, operation: "contains" } }), {
        status: 400,
        param: `${grader}.operation`,
        code: "invalid_grader",
      });
      // a field the rows lack is refused at creation, checked on the file's first row
      await refused(create({ grader: { ...GRADER, reference: "{{item.nope}}" } }), {
        status: 400,
        param: `${grader}.reference`,
        code: "invalid_variable",
        message: /item\.nope/,
      });
      // a judge runs in the job's training process: on a model this server serves, or an ft: model of the project
      for (const model of [
        "svc/no-such-model",
        `ft:${PICO}:${id.orgSlug}::0190a9a0-0000-7000-8000-000000000000`,
      ])
        await refused(create({ grader: { ...JUDGE, model } }), {
          status: 400,
          param: `${grader}.model`,
          code: "invalid_grader",
          message: new RegExp(
            model.startsWith("ft:") ? "no fine-tuned model of this project" : "not a base model",
          ),
        });
      // eval_interval and eval_samples without a validation file are refused above; out of range, with one
      await refused(
        create({ grader: GRADER, hyperparameters: { eval_samples: 0 } }, { validation_file: prompts.id }),
        {
          status: 400,
          param: `${hp}.eval_samples`,
          code: "invalid_request",
        },
      );
      assert.equal((await client.fineTuning.jobs.list()).data.length, before, "no refusal made a job");
    });
  });
}
