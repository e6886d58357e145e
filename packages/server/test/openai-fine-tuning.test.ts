// The OpenAI fine-tuning API of a real `svc server` (loopback, SQLite and
// PostgreSQL), driven by the official `openai` npm client as a script written
// for OpenAI would drive it: only baseURL, the key and the organization and
// project options (svc's slugs) differ. Files go up, a supervised job trains
// svc/pico-llama for 4 steps, its events are followed with the client's
// pagination, its checkpoints read, its ft: model and a checkpoint's answer
// chat completions, models are listed and deleted, a job is cancelled; a
// project API key reaches its own project only, until it is revoked; the
// official Python client runs the same flow (skipped, and counted, where
// python3 has no openai package); and each documented refusal comes back
// with OpenAI's status and error body.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { needs } from "@svc/engine/testing";
import OpenAI, { toFile } from "openai";
import {
  type Backend,
  call,
  chatJsonl,
  createJob,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  serverFor,
  tempDir,
  until,
  uploadDataset,
} from "./harness.js";
import { openAiClient, PICO, PICO_DIR, refused } from "./openai-client.js";

type Server = Awaited<ReturnType<typeof serverFor>>;

const run = promisify(execFile);

/** The supervised flow as a Python script for OpenAI would run it: only base_url and api_key set. */
const PYTHON_FLOW = `
import json, sys, time, openai
base_url, api_key, path, model = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
training = client.files.create(file=open(path, "rb"), purpose="fine-tune")
job = client.fine_tuning.jobs.create(model=model, training_file=training.id, suffix="py",
    method={"type": "supervised", "supervised": {"hyperparameters": {"n_epochs": 1, "batch_size": 4}}})
while job.status not in ("succeeded", "failed", "cancelled"):
    time.sleep(0.2)
    job = client.fine_tuning.jobs.retrieve(job.id)
events = [e.message for e in client.fine_tuning.jobs.list_events(job.id, limit=2)]
checkpoints = [c.fine_tuned_model_checkpoint for c in client.fine_tuning.jobs.checkpoints.list(job.id)]
answer = client.chat.completions.create(model=job.fine_tuned_model, max_tokens=3,
    messages=[{"role": "user", "content": "What is 3 plus one?"}])
deleted = client.models.delete(job.fine_tuned_model)
print(json.dumps({"status": job.status, "model": job.fine_tuned_model, "events": events,
    "checkpoints": checkpoints, "answer_model": answer.model, "deleted": deleted.deleted}))
`;

const jsonl = (rows: number) => toFile(Buffer.from(chatJsonl(rows)), "train.jsonl");

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`OpenAI fine-tuning API with the official client (${backend})`, () => {
    let server: Server;
    let id: Identity;
    let client: OpenAI;
    before(async () => {
      server = await serverFor(backend, ["--model", `${PICO}=${PICO_DIR}`]);
      id = await newIdentity(server.apiUrl);
      client = openAiClient(server, id);
    });
    after(() => server?.cleanup());

    it("uploads, trains, follows events, reads checkpoints, chats with the ft: model and a checkpoint, deletes the model", async () => {
      const training = await client.files.create({ file: await jsonl(8), purpose: "fine-tune" });
      assert.equal(training.object, "file");
      assert.equal(training.purpose, "fine-tune");
      assert.equal(training.filename, "train.jsonl");
      assert.equal(training.bytes, Buffer.byteLength(chatJsonl(8)));
      assert.match(training.id, /^file-/);
      const validation = await client.files.create({
        file: await toFile(Buffer.from(chatJsonl(4)), "valid.jsonl"),
        purpose: "fine-tune",
      });
      const listed = [];
      for await (const file of client.files.list({ purpose: "fine-tune", limit: 1 })) listed.push(file.id);
      assert.deepEqual(listed, [validation.id, training.id]);
      assert.equal((await client.files.retrieve(training.id)).bytes, training.bytes);
      assert.equal(await (await client.files.content(training.id)).text(), chatJsonl(8));

      const created = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: training.id,
        validation_file: validation.id,
        suffix: "demo",
        seed: 7,
        metadata: { team: "support" },
        method: {
          type: "supervised",
          supervised: { hyperparameters: { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 5 } },
        },
      });
      assert.equal(created.object, "fine_tuning.job");
      assert.match(created.id, /^ftjob-/);
      assert.ok(["queued", "running"].includes(created.status), created.status);
      assert.deepEqual(created.hyperparameters, { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 5 });
      assert.deepEqual(created.method, {
        type: "supervised",
        supervised: { hyperparameters: { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 5 } },
      });
      assert.equal(created.seed, 7);
      assert.deepEqual(created.metadata, { team: "support" });
      assert.equal(created.fine_tuned_model, null);

      // The same job is an svc job: /v1/jobs shows it, with svc's learning rate (5 × 2e-4).
      const svcJob = await call(server.apiUrl, "GET", `/v1/jobs/${created.id.slice("ftjob-".length)}`, {
        token: id.token,
      });
      assert.equal(svcJob.status, 200);
      assert.equal(svcJob.body.job.hyperparameters.learningRate, 1e-3);
      assert.equal(svcJob.body.job.hyperparameters.numTrainEpochs, 2);

      const job = await until(
        "the job to finish",
        async () => {
          const j = await client.fineTuning.jobs.retrieve(created.id);
          return ["succeeded", "failed", "cancelled"].includes(j.status) && j;
        },
        180_000,
      );
      assert.equal(job.status, "succeeded", JSON.stringify(job.error));
      assert.equal(
        job.fine_tuned_model,
        `ft:${PICO}:${id.orgSlug}:demo:${created.id.slice("ftjob-".length)}`,
      );
      assert.equal((job as { user_provided_suffix?: string }).user_provided_suffix, "demo");
      assert.ok(job.finished_at && job.finished_at >= job.created_at);

      // Events, newest first, page by page (2 a page) through the client's auto-pagination.
      const events = [];
      for await (const event of client.fineTuning.jobs.listEvents(job.id, { limit: 2 })) events.push(event);
      assert.equal(new Set(events.map((e) => e.id)).size, events.length);
      assert.equal(events[0].message, "The job has successfully completed");
      assert.equal(events.at(-1)?.message, "Fine-tuning job started");
      const metrics = events.filter((e) => e.type === "metrics");
      assert.deepEqual(
        metrics.map((e) => (e.data as { step: number }).step),
        [4, 3, 2, 1],
      );
      for (const e of metrics) {
        const data = e.data as Record<string, number>;
        assert.equal(e.object, "fine_tuning.job.event");
        assert.equal(e.level, "info");
        assert.equal(typeof data.train_loss, "number");
        assert.equal(data.total_steps, 4);
        // counted in the step's own loss pass: the share of its answer tokens predicted exactly
        assert.ok(data.train_mean_token_accuracy >= 0 && data.train_mean_token_accuracy <= 1);
      }
      // trained_tokens: every step's tokens (prompts and answers), as the svc events report them
      const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id.slice("ftjob-".length), 60_000);
      const stepTokens = frames
        .filter((f) => f.event === "training.log")
        .map((f) => (JSON.parse(f.data) as { trainedTokens: number }).trainedTokens);
      assert.equal(stepTokens.length, 4);
      assert.ok(stepTokens.every((n) => Number.isInteger(n) && n > 0));
      assert.equal(
        job.trained_tokens,
        stepTokens.reduce((a, b) => a + b, 0),
      );
      assert.equal(
        (await client.fineTuning.jobs.list()).data.find((j) => j.id === job.id)?.trained_tokens,
        job.trained_tokens,
      );
      assert.equal(typeof (metrics[0].data as Record<string, number>).valid_loss, "number");

      const checkpoints = (await client.fineTuning.jobs.checkpoints.list(job.id)).data;
      assert.ok(checkpoints.length >= 1);
      const atStep2 = checkpoints.find((c) => c.step_number === 2);
      assert.ok(atStep2, JSON.stringify(checkpoints));
      assert.equal(atStep2.object, "fine_tuning.job.checkpoint");
      assert.equal(atStep2.fine_tuning_job_id, job.id);
      assert.equal(atStep2.fine_tuned_model_checkpoint, `${job.fine_tuned_model}:ckpt-step-2`);
      assert.equal(typeof atStep2.metrics.train_loss, "number");
      assert.equal(typeof atStep2.metrics.valid_loss, "number");
      assert.equal(typeof atStep2.metrics.train_mean_token_accuracy, "number");

      // The result file: OpenAI's metrics CSV, one row a step.
      assert.equal(job.result_files.length, 1);
      const csv = await (await client.files.content(job.result_files[0])).text();
      const lines = csv.trim().split("\n");
      assert.equal(lines[0], "step,train_loss,train_accuracy,valid_loss,valid_mean_token_accuracy");
      assert.deepEqual(
        lines.slice(1).map((line) => Number(line.split(",")[0])),
        [1, 2, 3, 4],
      );
      // train_accuracy is the step's train mean token accuracy
      assert.deepEqual(
        lines.slice(1).map((line) => Number(line.split(",")[2])),
        [...metrics].reverse().map((e) => (e.data as Record<string, number>).train_mean_token_accuracy),
      );

      for (const model of [job.fine_tuned_model as string, atStep2.fine_tuned_model_checkpoint, PICO]) {
        const completion = await client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "What is 3 plus one?" }],
          max_tokens: 3,
        });
        assert.equal(completion.object, "chat.completion");
        assert.equal(completion.model, model);
        assert.equal(typeof completion.choices[0].message.content, "string");
      }

      const models = (await client.models.list()).data;
      assert.ok(models.some((m) => m.id === PICO && m.object === "model" && m.owned_by === "svc"));
      assert.ok(models.some((m) => m.id === job.fine_tuned_model && m.owned_by === id.orgSlug));
      assert.equal((await client.models.retrieve(PICO)).id, PICO);
      assert.equal((await client.models.retrieve(job.fine_tuned_model as string)).id, job.fine_tuned_model);
      // svc's own clients still read `models` from the same answer.
      const raw = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
      assert.ok(raw.body.models.some((m: { name: string }) => m.name === PICO));

      // A checkpoint goes with its job's model.
      await refused(client.models.delete(atStep2.fine_tuned_model_checkpoint), {
        status: 400,
        param: "model",
        code: "model_not_deletable",
      });
      assert.deepEqual(await client.models.delete(job.fine_tuned_model as string), {
        id: job.fine_tuned_model,
        object: "model",
        deleted: true,
      });
      assert.ok(!(await client.models.list()).data.some((m) => m.id === job.fine_tuned_model));
      await refused(client.models.retrieve(atStep2.fine_tuned_model_checkpoint), {
        status: 404,
        param: "model",
        code: "model_not_found",
      });
      await refused(
        client.chat.completions.create({
          model: job.fine_tuned_model as string,
          messages: [{ role: "user", content: "hi" }],
        }),
        {
          status: 404,
          param: "model",
          code: "model_not_found",
        },
      );
      await refused(client.models.delete(PICO), {
        status: 403,
        param: "model",
        code: "model_not_deletable",
      });
      await refused(client.files.delete(job.result_files[0]), {
        status: 400,
        param: "file_id",
        code: "file_in_use",
      });

      // A file a job trained on stays with the job; one no job uses is deleted.
      await refused(client.files.delete(training.id), { status: 409, param: "file_id", code: "file_in_use" });
      const spare = await client.files.create({ file: await jsonl(2), purpose: "fine-tune" });
      assert.deepEqual(await client.files.delete(spare.id), { id: spare.id, object: "file", deleted: true });
      await refused(client.files.retrieve(spare.id), { status: 404, param: "file_id", code: "not_found" });
    });

    it("lists svc jobs made without this API, filters by metadata, pauses and cancels", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(8));
      const svcJob = await createJob(
        server.apiUrl,
        id,
        dataset.id,
        { maxSteps: 1 },
        { baseModel: PICO, dryRun: true },
      );
      const long = await client.fineTuning.jobs.create({
        model: PICO,
        training_file: `file-${dataset.id}`,
        metadata: { run: "long" },
        hyperparameters: { n_epochs: 50, batch_size: 1 },
      });
      assert.deepEqual(long.hyperparameters, { n_epochs: 50, batch_size: 1, learning_rate_multiplier: 1 });
      const all = [];
      for await (const j of client.fineTuning.jobs.list({ limit: 1 })) all.push(j.id);
      assert.ok(all.includes(`ftjob-${svcJob.id}`));
      assert.equal(all[0], long.id, "newest first");
      const filtered = await client.fineTuning.jobs.list({ metadata: { run: "long" } });
      assert.deepEqual(
        filtered.data.map((j) => j.id),
        [long.id],
      );
      // A dry run (svc's) succeeds without training: no model, no result file.
      const dry = await until("the dry run to finish", async () => {
        const j = await client.fineTuning.jobs.retrieve(`ftjob-${svcJob.id}`);
        return j.status === "succeeded" && j;
      });
      assert.equal(dry.fine_tuned_model, null);
      assert.deepEqual(dry.result_files, []);
      // Pause and resume (openai-pause.test.ts follows a job through them): a pausing job can still be cancelled.
      const pausing = await client.fineTuning.jobs.pause(long.id);
      assert.ok(["queued", "running", "paused"].includes(pausing.status as string), pausing.status);
      await client.fineTuning.jobs.cancel(long.id);
      const cancelled = await until("the job to stop", async () => {
        const j = await client.fineTuning.jobs.retrieve(long.id);
        return j.status === "cancelled" && j;
      });
      assert.equal(cancelled.fine_tuned_model, null);
      await refused(client.fineTuning.jobs.cancel(long.id), {
        status: 409,
        param: null,
        code: "job_finished",
      });
      await refused(client.fineTuning.jobs.pause(long.id), {
        status: 409,
        param: null,
        code: "job_finished",
      });
      await refused(client.fineTuning.jobs.retrieve("ftjob-nothing"), {
        status: 404,
        param: "fine_tuning_job_id",
        code: "not_found",
      });
    });

    it("a project API key sees only its own project, and revoking it takes effect on the next request", async () => {
      const issued = await call(server.apiUrl, "POST", `/v1/project-keys?${id.scope}`, {
        token: id.token,
        json: { label: "ci" },
      });
      assert.equal(issued.status, 201);
      const key = issued.body.key as { id: string; plaintext: string; prefix: string };
      assert.match(key.plaintext, /^svc_proj_[0-9A-Za-z]{40}$/);
      assert.equal(key.prefix, key.plaintext.slice(0, 12));
      const listed = await call(server.apiUrl, "GET", `/v1/project-keys?${id.scope}`, { token: id.token });
      assert.deepEqual(
        listed.body.keys.map((k: Record<string, unknown>) => [k.id, k.enabled, "plaintext" in k]),
        [[key.id, true, false]],
      );
      // Only baseURL and the key: the key is the scope.
      const keyClient = new OpenAI({ apiKey: key.plaintext, baseURL: `${server.apiUrl}/v1`, maxRetries: 0 });
      const mine = await keyClient.files.create({ file: await jsonl(2), purpose: "fine-tune" });
      assert.ok((await keyClient.files.list()).data.some((f) => f.id === mine.id));
      assert.equal((await keyClient.files.retrieve(mine.id)).id, mine.id);
      // Another project of the same org, and another org: not found.
      const second = await call(server.apiUrl, "POST", "/v1/projects", {
        token: id.token,
        json: { orgSlug: id.orgSlug, slug: "second" },
      });
      assert.equal(second.status, 201);
      const secondScope = { ...id, projectSlug: "second", scope: `orgSlug=${id.orgSlug}&projectSlug=second` };
      const elsewhere = await uploadDataset(server.apiUrl, secondScope);
      await refused(keyClient.files.retrieve(`file-${elsewhere.id}`), {
        status: 404,
        param: "file_id",
        code: "not_found",
      });
      assert.ok(!(await keyClient.files.list()).data.some((f) => f.id === `file-${elsewhere.id}`));
      await refused(
        new OpenAI({
          apiKey: key.plaintext,
          baseURL: `${server.apiUrl}/v1`,
          organization: id.orgSlug,
          project: "second",
          maxRetries: 0,
        }).files.list(),
        { status: 401, param: null, code: "mismatched_project" },
      );
      // svc's own routes take an svc token, not a project key.
      const jobs = await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: key.plaintext });
      assert.equal(jobs.status, 403);
      assert.equal(jobs.body.error.code, "project_key_not_allowed");

      const revoked = await call(server.apiUrl, "DELETE", `/v1/project-keys/${key.id}?${id.scope}`, {
        token: id.token,
      });
      assert.equal(revoked.body.key.enabled, false);
      await refused(keyClient.files.list(), { status: 401, param: null, code: "invalid_api_key" });
    });

    if (backend === "sqlite")
      it("the official Python client runs the supervised flow with a project key", async (t) => {
        const python = process.env.SVC_PYTHON ?? "python3";
        if (
          !(await run(python, ["-c", "import openai"]).then(
            () => true,
            () => false,
          ))
        ) {
          t.skip(needs("openai (Python)", `${python} has no openai package`));
          return;
        }
        const key = await call(server.apiUrl, "POST", `/v1/project-keys?${id.scope}`, {
          token: id.token,
          json: { label: "python" },
        });
        const path = join(tempDir("openai-python"), "train.jsonl");
        await writeFile(path, chatJsonl(8));
        const { stdout } = await run(
          python,
          ["-c", PYTHON_FLOW, `${server.apiUrl}/v1`, key.body.key.plaintext, path, PICO],
          {
            timeout: 180_000,
          },
        );
        const result = JSON.parse(stdout);
        assert.equal(result.status, "succeeded");
        assert.match(result.model, new RegExp(`^ft:${PICO}:${id.orgSlug}:py:[0-9a-f-]{36}$`));
        assert.equal(result.events[0], "The job has successfully completed");
        assert.equal(result.events.at(-1), "Fine-tuning job started");
        assert.deepEqual(result.checkpoints, [`${result.model}:ckpt-step-2`]);
        assert.equal(result.answer_model, result.model);
        assert.equal(result.deleted, true);
      });

    it("refuses what it cannot honour with OpenAI's status and error body", async () => {
      await refused(client.files.create({ file: await jsonl(2), purpose: "assistants" }), {
        status: 400,
        param: "purpose",
        code: "invalid_request",
        message: /fine-tune/,
      });
      const badLine = `${chatJsonl(1)}{"messages": [{"role": "user"}]}\n`;
      await refused(
        client.files.create({ file: await toFile(Buffer.from(badLine), "bad.jsonl"), purpose: "fine-tune" }),
        {
          status: 400,
          param: "file",
          code: "invalid_file_format",
          message: /bad\.jsonl line 2/,
        },
      );
      const training = await client.files.create({ file: await jsonl(4), purpose: "fine-tune" });
      const base = { model: PICO, training_file: training.id };
      await refused(client.fineTuning.jobs.create({ ...base, learning_rate: 0.1 } as never), {
        status: 400,
        param: "learning_rate",
        code: "invalid_request",
        message: /is not a known field/,
      });
      // Chat rows in a dpo job (openai-dpo.test.ts trains one on preference pairs).
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          method: { type: "dpo", dpo: { hyperparameters: { beta: 0.1 } } },
        }),
        { status: 400, param: "training_file", code: "invalid_training_file", message: /preference pairs/ },
      );
      // A reinforcement method needs its grader (openai-reinforcement.test.ts trains one).
      await refused(client.fineTuning.jobs.create({ ...base, method: { type: "reinforcement" } } as never), {
        status: 400,
        param: "method.reinforcement",
        code: "invalid_request",
      });
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          method: { type: "supervised", supervised: { hyperparameters: { n_epochs: 0 } } },
        }),
        { status: 400, param: "method.supervised.hyperparameters.n_epochs", code: "invalid_request" },
      );
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          model: `ft:${PICO}:x::0192f2a4-7b1c-7d3e-8f00-0123456789ab`,
        }),
        {
          status: 400,
          param: "model",
          code: "model_not_available",
        },
      );
      await refused(client.fineTuning.jobs.create({ ...base, model: "svc/none" }), {
        status: 400,
        param: "model",
        code: "unknown_base_model",
      });
      await refused(client.fineTuning.jobs.create({ ...base, training_file: "file-nothing" }), {
        status: 400,
        param: "training_file",
        code: "invalid_training_file",
      });
      await refused(client.fineTuning.jobs.create({ ...base, validation_file: "file-nothing" }), {
        status: 400,
        param: "validation_file",
        code: "invalid_validation_file",
      });
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          hyperparameters: { n_epochs: 1 },
          method: { type: "supervised" },
        }),
        { status: 400, param: "hyperparameters", code: "invalid_request" },
      );
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          method: { type: "supervised", supervised: { hyperparameters: { reasoning_effort: "low" } } },
        } as never),
        { status: 400, param: "method.supervised.hyperparameters.reasoning_effort", code: "invalid_request" },
      );
      await refused(
        client.fineTuning.jobs.create({
          ...base,
          integrations: [{ type: "wandb", wandb: { project: "p" } }],
        }),
        { status: 400, param: "integrations", code: "invalid_request" },
      );
      await refused(client.fineTuning.jobs.create({ ...base, suffix: "has:colon" }), {
        status: 400,
        param: "suffix",
        code: "invalid_request",
      });
      // Scope: none, another org, another project; a bad key.
      await refused(openAiClient(server, id, { organization: null, project: null }).files.list(), {
        status: 400,
        param: null,
        code: "missing_scope",
      });
      await refused(openAiClient(server, id, { organization: "someone-else" }).files.list(), {
        status: 401,
        param: null,
        code: "no_such_organization",
      });
      await refused(openAiClient(server, id, { project: "nothing-here" }).files.list(), {
        status: 401,
        param: null,
        code: "no_such_project",
      });
      const other = await newIdentity(server.apiUrl, "other");
      await refused(
        openAiClient(server, id).files.retrieve(`file-${(await uploadDataset(server.apiUrl, other)).id}`),
        {
          status: 404,
          param: "file_id",
          code: "not_found",
        },
      );
      await refused(openAiClient(server, { ...id, token: "svc-wrong" }).files.list(), {
        status: 401,
        param: null,
        code: "unauthorized",
      });
    });
  });
}
