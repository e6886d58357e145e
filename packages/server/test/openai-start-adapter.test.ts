// The OpenAI fine-tuning API's `ft:` model as `model` continues from that
// job's final adapter, and a checkpoint's `…:ckpt-step-N` from that
// checkpoint (svc's startAdapter, start-adapter.test.ts), driven by the
// official `openai` client through `svc server` (SQLite and PostgreSQL); a dpo
// job from an ft: model holds it, frozen, as its reference (step 1: loss ln 2);
// an ft: model that names no model the caller may see is 400 model_not_available.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { toFile } from "openai";
import {
  call,
  chatJsonl,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
} from "./harness.js";
import { openAiClient } from "./openai-client.js";

const ROWS = 8;

for (const backend of ["sqlite", "postgres"] as const)
  describe(`OpenAI fine-tuning jobs from an ft: model (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100"]);
      id = await newIdentity(server.apiUrl);
    });
    after(async () => server?.cleanup());

    it("continues from an ft: model and from a checkpoint's, with SFT or DPO", async () => {
      const client = openAiClient(server, id);
      const file = await client.files.create({
        file: await toFile(Buffer.from(chatJsonl(ROWS)), "train.jsonl"),
        purpose: "fine-tune",
      });
      const hyperparameters = { n_epochs: 1, batch_size: ROWS, learning_rate_multiplier: 1 };
      const parent = await client.fineTuning.jobs.create({
        model: TINY_MODEL,
        training_file: file.id,
        suffix: "parent",
        hyperparameters: { ...hyperparameters, n_epochs: 3 },
      });
      const done = async (jobId: string) => {
        await eventsUntilEnd(server.apiUrl, id.token, jobId.replace(/^ftjob-/, ""), 120_000);
        return client.fineTuning.jobs.retrieve(jobId);
      };
      const finished = await done(parent.id);
      assert.equal(finished.status, "succeeded", JSON.stringify(finished.error));
      const model = finished.fine_tuned_model as string;
      const child = await client.fineTuning.jobs.create({ model, training_file: file.id, hyperparameters });
      const svcJob = await call(server.apiUrl, "GET", `/v1/jobs/${child.id.replace(/^ftjob-/, "")}`, {
        token: id.token,
      });
      assert.deepEqual(svcJob.body.job.startAdapter, {
        kind: "final",
        jobId: parent.id.replace(/^ftjob-/, ""),
      });
      assert.equal((await done(child.id)).status, "succeeded");
      const checkpoints = await client.fineTuning.jobs.checkpoints.list(parent.id);
      const ckpt = checkpoints.data[0].fine_tuned_model_checkpoint;
      const fromCkpt = await client.fineTuning.jobs.create({
        model: ckpt,
        training_file: file.id,
        hyperparameters,
      });
      const ckptJob = await call(server.apiUrl, "GET", `/v1/jobs/${fromCkpt.id.replace(/^ftjob-/, "")}`, {
        token: id.token,
      });
      assert.equal(ckptJob.body.job.startAdapter.kind, "checkpoint");
      assert.equal(ckptJob.body.job.startAdapter.step, checkpoints.data[0].step_number);
      assert.equal((await done(fromCkpt.id)).status, "succeeded");
      // SFT, then DPO from its ft: model: the reference is that adapter, so step 1's rewards are 0
      const pairs = Array.from({ length: 4 }, (_, i) =>
        JSON.stringify({
          prompt: [{ role: "user", content: `q${i}` }],
          chosen: [{ role: "assistant", content: `yes ${i}` }],
          rejected: [{ role: "assistant", content: `no ${i}` }],
        }),
      );
      const prefs = await client.files.create({
        file: await toFile(Buffer.from(`${pairs.join("\n")}\n`), "prefs.jsonl"),
        purpose: "fine-tune",
      });
      const dpo = await client.fineTuning.jobs.create({
        model,
        training_file: prefs.id,
        method: { type: "dpo", dpo: { hyperparameters: { n_epochs: 1, batch_size: 2, beta: 0.1 } } },
      });
      const dpoId = dpo.id.replace(/^ftjob-/, "");
      const dpoJob = await call(server.apiUrl, "GET", `/v1/jobs/${dpoId}`, { token: id.token });
      assert.equal(dpoJob.body.job.method, "dpo");
      assert.deepEqual(dpoJob.body.job.startAdapter, {
        kind: "final",
        jobId: parent.id.replace(/^ftjob-/, ""),
      });
      const frames = await eventsUntilEnd(server.apiUrl, id.token, dpoId, 120_000);
      const logs = frames
        .filter((f) => f.event !== "ping")
        .map((f) => JSON.parse(f.data))
        .filter((e) => e.type === "training.log");
      assert.ok(Math.abs(logs[0].loss - Math.log(2)) < 1e-6, `step 1 loss ${logs[0].loss}`);
      assert.equal(logs[0].rewards.margin, 0);
      assert.equal((await client.fineTuning.jobs.retrieve(dpo.id)).status, "succeeded");
      const error = await client.fineTuning.jobs
        .create({ model: `${model.slice(0, -4)}0000`, training_file: file.id })
        .then(
          () => assert.fail("an unknown ft: model was accepted"),
          (e) => e,
        );
      assert.equal(error.status, 400);
      assert.equal(error.error.param, "model");
      assert.equal(error.error.code, "model_not_available");
    });
  });
