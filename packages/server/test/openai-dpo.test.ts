// A DPO job through OpenAI's fine-tuning API of a real `svc server` (loopback,
// SQLite and PostgreSQL), driven by the official `openai` npm client as a
// script written for OpenAI would drive it: preference files in OpenAI's
// format go up, a `method: { type: "dpo" }` job trains svc/pico-llama for 4
// steps, the job shows its method with the resolved hyperparameters, its
// events are followed with the client's pagination, its checkpoints read, and
// its ft: model and a checkpoint's answer chat completions. A file that does
// not fit the method, and DPO hyperparameters out of range, are refused with
// OpenAI's error naming the param (docs/openai-fine-tuning.md#methods).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import { toFile } from "openai";
import { type Backend, call, chatJsonl, type Identity, newIdentity, serverFor, until } from "./harness.js";
import { openAiClient, PICO, PICO_DIR, refused, resultCsv } from "./openai-client.js";

const COLOURS = ["red", "green", "blue", "yellow"];

/** Pairs in OpenAI's preference format: the preferred answer is the colour the prompt names. */
function preferenceJsonl(names: string[]): string {
  return `${names
    .map((name, i) =>
      JSON.stringify({
        input: {
          messages: [{ role: "user", content: `${name} likes ${COLOURS[i % 4]}. Which colour?` }],
        },
        preferred_output: [{ role: "assistant", content: COLOURS[i % 4] }],
        non_preferred_output: [{ role: "assistant", content: COLOURS[(i + 1) % 4] }],
      }),
    )
    .join("\n")}\n`;
}

const TRAIN = preferenceJsonl(["Ana", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana"]);
const VALID = preferenceJsonl(["Ivo", "Jack", "Kim", "Leo"]);

type Server = Awaited<ReturnType<typeof serverFor>>;

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`OpenAI fine-tuning API: DPO with the official client (${backend})`, () => {
    let server: Server;
    let id: Identity;
    let client: OpenAI;
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100", "--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      client = openAiClient(server, id);
    });
    after(() => server?.cleanup());

    it("uploads preference files, trains a dpo job, follows events, reads checkpoints, chats with its ft: models", async () => {
      const training = await client.files.create({
        file: await toFile(Buffer.from(TRAIN), "prefs.jsonl"),
        purpose: "fine-tune",
      });
      const validation = await client.files.create({
        file: await toFile(Buffer.from(VALID), "prefs-valid.jsonl"),
        purpose: "fine-tune",
      });
      const hyperparameters = { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 20, beta: 0.2 };
      const created = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: training.id,
        validation_file: validation.id,
        suffix: "prefs",
        seed: 3,
        method: { type: "dpo", dpo: { hyperparameters } },
      });
      assert.deepEqual(created.method, { type: "dpo", dpo: { hyperparameters } });
      assert.deepEqual(created.hyperparameters, { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 20 });

      // The same job is an svc DPO job: its rate is 20 × DPO's base rate 1e-4.
      const svcJob = await call(server.apiUrl, "GET", `/v1/jobs/${created.id.slice("ftjob-".length)}`, {
        token: id.token,
      });
      assert.equal(svcJob.body.job.method, "dpo");
      assert.equal(svcJob.body.job.hyperparameters.beta, 0.2);
      assert.ok(Math.abs(svcJob.body.job.hyperparameters.learningRate - 2e-3) < 1e-12);

      const job = await until(
        "the dpo job to finish",
        async () => {
          const j = await client.fineTuning.jobs.retrieve(created.id);
          return ["succeeded", "failed", "cancelled"].includes(j.status) && j;
        },
        180_000,
      );
      assert.equal(job.status, "succeeded", JSON.stringify(job.error));
      assert.deepEqual(job.method, { type: "dpo", dpo: { hyperparameters } });
      assert.equal(
        job.fine_tuned_model,
        `ft:${PICO}:${id.orgSlug}:prefs:${created.id.slice("ftjob-".length)}`,
      );
      // A listed job reads the same.
      const listed = (await client.fineTuning.jobs.list()).data.find((j) => j.id === job.id);
      assert.deepEqual(listed?.method, job.method);

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
        for (const key of [
          "train_loss",
          "train_chosen_reward",
          "train_rejected_reward",
          "train_reward_margin",
        ])
          assert.equal(typeof data[key], "number", key);
        assert.ok(data.train_preference_accuracy >= 0 && data.train_preference_accuracy <= 1);
        assert.ok(
          Math.abs(data.train_reward_margin - (data.train_chosen_reward - data.train_rejected_reward)) < 1e-9,
        );
      }
      // The first step trains from the reference: every reward 0, a tie (accuracy 0.5).
      const first = metrics.at(-1)?.data as Record<string, number>;
      assert.deepEqual([first.train_reward_margin, first.train_preference_accuracy], [0, 0.5]);
      // An eval at the end of each epoch (steps 2 and 4): DPO's loss and figures on the validation pairs.
      const evals = metrics
        .filter((e) => "valid_loss" in (e.data as object))
        .map((e) => (e.data as { step: number }).step);
      assert.deepEqual(evals, [4, 2]);
      assert.equal(typeof (metrics[0].data as Record<string, number>).valid_preference_accuracy, "number");

      const checkpoints = (await client.fineTuning.jobs.checkpoints.list(job.id)).data;
      assert.deepEqual(
        checkpoints.map((c) => c.step_number),
        [4, 2],
      );
      const atStep2 = checkpoints[1];
      assert.equal(atStep2.fine_tuned_model_checkpoint, `${job.fine_tuned_model}:ckpt-step-2`);
      assert.equal(typeof atStep2.metrics.train_loss, "number");
      assert.equal(typeof (atStep2.metrics as Record<string, number>).valid_reward_margin, "number");

      // The metrics CSV: OpenAI's columns, then the preference figures, each as the step's event has it.
      const csv = await resultCsv(client, job);
      const figures = ["chosen_reward", "rejected_reward", "reward_margin", "preference_accuracy"];
      assert.deepEqual(csv.columns, [
        "step",
        "train_loss",
        "train_accuracy",
        "valid_loss",
        "valid_mean_token_accuracy",
        ...figures.map((f) => `train_${f}`),
        ...figures.map((f) => `valid_${f}`),
      ]);
      assert.deepEqual(
        csv.rows.map((row) => Number(row.step)),
        [1, 2, 3, 4],
      );
      for (const row of csv.rows) {
        const data = metrics.find((e) => (e.data as { step: number }).step === Number(row.step))
          ?.data as Record<string, number>;
        for (const column of csv.columns.slice(1)) {
          const metric = column === "train_accuracy" ? "train_mean_token_accuracy" : column;
          assert.equal(row[column], metric in data ? String(data[metric]) : "", `${column} at ${row.step}`);
        }
        // the validation pairs' figures only where an eval ran (the end of each epoch)
        assert.equal(row.valid_reward_margin === "", ![2, 4].includes(Number(row.step)), row.step);
      }

      for (const model of [job.fine_tuned_model as string, atStep2.fine_tuned_model_checkpoint]) {
        const completion = await client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "Mia likes blue. Which colour?" }],
          max_tokens: 3,
        });
        assert.equal(completion.model, model);
        assert.equal(typeof completion.choices[0].message.content, "string");
      }
    });

    it("refuses a file that does not fit the method, and DPO hyperparameters out of range, naming the param", async () => {
      const chat = await client.files.create({
        file: await toFile(Buffer.from(chatJsonl(8)), "chat.jsonl"),
        purpose: "fine-tune",
      });
      const prefs = await client.files.create({
        file: await toFile(Buffer.from(TRAIN), "prefs.jsonl"),
        purpose: "fine-tune",
      });
      const dpo = { type: "dpo" as const, dpo: { hyperparameters: { n_epochs: 1 } } };
      const before = (await client.fineTuning.jobs.list()).data.length;
      await refused(client.fineTuning.jobs.create({ model: PICO, training_file: chat.id, method: dpo }), {
        status: 400,
        param: "training_file",
        code: "invalid_training_file",
        message: new RegExp(
          `^"training_file": method "dpo" trains on preference pairs, and file ${chat.id} `,
        ),
      });
      await refused(
        client.fineTuning.jobs.create({
          model: PICO,
          training_file: prefs.id,
          validation_file: chat.id,
          method: dpo,
        }),
        { status: 400, param: "validation_file", code: "invalid_validation_file" },
      );
      // Pairs in a supervised job (the default method) are refused the other way round.
      await refused(client.fineTuning.jobs.create({ model: PICO, training_file: prefs.id }), {
        status: 400,
        param: "training_file",
        code: "invalid_training_file",
        message: new RegExp(`file ${prefs.id} holds preference pairs`),
      });
      for (const [field, value] of [
        ["beta", 0],
        ["beta", 101],
        ["n_epochs", 0],
        ["learning_rate_multiplier", 10_001],
        // svc's models are not reasoning models: refused, never ignored
        ["reasoning_effort", "medium"],
      ] as const)
        await refused(
          client.fineTuning.jobs.create({
            model: PICO,
            training_file: prefs.id,
            method: { type: "dpo", dpo: { hyperparameters: { [field]: value } } } as never,
          }),
          { status: 400, param: `method.dpo.hyperparameters.${field}`, code: "invalid_request" },
        );
      await refused(
        client.fineTuning.jobs.create({
          model: PICO,
          training_file: prefs.id,
          method: { type: "dpo", dpo: { hyperparameters: { beta: 0.1, loss: "simpo" } } } as never,
        }),
        { status: 400, param: "method.dpo.hyperparameters.loss", code: "invalid_request" },
      );
      assert.equal((await client.fineTuning.jobs.list()).data.length, before, "no refusal made a job");
    });
  });
}
