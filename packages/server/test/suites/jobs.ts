// Jobs, their SSE event stream (history, resume, pings, end), cancel and artifacts.
import assert from "node:assert/strict";
import { it } from "node:test";
import {
  call,
  chatJsonl,
  createJob,
  eventsUntilEnd,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  type SseFrame,
  TINY_MODEL,
  until,
  uploadDataset,
} from "../harness.js";

const types = (frames: SseFrame[]) => frames.map((f) => f.event);

export function jobTests(server: () => ServerProcess) {
  it("rejects bad job requests naming the field, and creates nothing", async () => {
    const api = server().apiUrl;
    const id = await newIdentity(api);
    const other = await newIdentity(api);
    const dataset = await uploadDataset(api, id);
    const foreign = await uploadDataset(api, other);
    const base = { name: "n", baseModel: TINY_MODEL, datasetId: dataset.id };
    const cases: [unknown, RegExp][] = [
      [{ ...base, name: undefined }, /"name" is required/],
      [{ ...base, baseModel: "nobody/none" }, /"baseModel": base model "nobody\/none" is not served here/],
      [{ ...base, datasetId: "not-a-uuid" }, /"datasetId" must match a UUID/],
      [{ ...base, datasetId: foreign.id }, /"datasetId": no dataset/],
      [{ ...base, evalFraction: 0.9 }, /"evalFraction" must be at most 0.5/],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, learningRate: -1 } },
        /"hyperparameters.learningRate" must be a positive number/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, maxSteps: 2.5 } },
        /"hyperparameters.maxSteps" must be a positive integer/,
      ],
      [{ ...base, hyperparameters: { lora: { r: 4 } } }, /"hyperparameters.lora.alpha" is required/],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8, targetModules: ["x_proj"] } } },
        /"hyperparameters.lora.targetModules\[0\]": "x_proj" is not a LoRA target of test\/tiny \(LlamaForCausalLM\); valid: "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", or "all-linear" alone/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8, targetModules: ["q_proj", "qkv_proj"] } } },
        /"hyperparameters.lora.targetModules\[1\]": "qkv_proj" is not a LoRA target of test\/tiny/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8, targetModules: [] } } },
        /"hyperparameters.lora.targetModules" must not be empty/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, turbo: true } },
        /"hyperparameters.turbo" is not a known field/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, truncation: "middle" } },
        /"hyperparameters.truncation" must be one of "keep_answers", "end", "strict"/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, exactMatchMaxTokens: 257 } },
        /"hyperparameters.exactMatchMaxTokens" must be at most 256/,
      ],
      [
        { ...base, hyperparameters: { lora: { r: 4, alpha: 8 }, exactMatchSamples: -1 } },
        /"hyperparameters.exactMatchSamples" must be at least 0/,
      ],
      [{ ...base, dryRun: "yes" }, /"dryRun" must be true or false/],
    ];
    for (const [json, message] of cases) {
      const reply = await call(api, "POST", `/v1/jobs?${id.scope}`, { token: id.token, json });
      assert.ok(reply.status === 400, `${JSON.stringify(json)} → ${reply.status}`);
      assert.match(reply.body.error.message, message);
    }
    const malformed = await call(api, "POST", `/v1/jobs?${id.scope}`, {
      token: id.token,
      body: "{",
      headers: { "content-type": "application/json" },
    });
    assert.equal(malformed.body.error.code, "invalid_json");
    const jobs = await call(api, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
    assert.deepEqual(jobs.body.jobs, []);
  });

  it("trains a job: events started/log/checkpoint/completed/end in order with ids, artifacts downloadable", async () => {
    const api = server().apiUrl;
    const id = await newIdentity(api);
    const dataset = await uploadDataset(api, id);
    const job = await createJob(api, id, dataset.id, { maxSteps: 4, saveSteps: 2 });
    assert.equal(job.status, "queued");
    const frames = await eventsUntilEnd(api, id.token, job.id);
    assert.deepEqual(types(frames), [
      "training.started",
      "training.log",
      "training.log",
      "checkpoint.saved",
      "training.log",
      "training.log",
      "checkpoint.saved",
      "training.completed",
      "end",
    ]);
    assert.deepEqual(
      frames.map((f) => f.id),
      frames.map((_, i) => String(i + 1)),
    );
    const payloads = frames.map((f) => JSON.parse(f.data));
    for (const p of payloads) {
      assert.equal(p.jobId, job.id);
      assert.ok(!Number.isNaN(Date.parse(p.timestamp)));
    }
    assert.equal(payloads[0].totalSteps, 4);
    assert.equal(payloads[0].trainExamples, 16);
    assert.equal(typeof payloads[1].loss, "number");
    assert.equal(payloads[1].evalLoss, null);
    // No eval set: the task metrics are there, as null.
    assert.equal(payloads[1].evalTokenAccuracy, null);
    assert.equal(payloads[1].evalExactMatch, null);
    assert.equal(payloads[3].step, 2);
    const completed = payloads[7];
    assert.deepEqual(
      completed.artifacts.map((a: { name: string }) => a.name),
      ["checkpoint-2", "checkpoint-4", "final", "tensorboard"],
    );
    assert.equal(completed.metrics.steps, 4);

    const got = await call(api, "GET", `/v1/jobs/${job.id}`, { token: id.token });
    assert.equal(got.body.job.status, "completed");
    assert.ok(got.body.job.startedAt && got.body.job.finishedAt);
    const artifacts = await call(api, "GET", `/v1/jobs/${job.id}/artifacts`, { token: id.token });
    assert.equal(artifacts.body.artifacts.length, 4);
    const final = await call(api, "GET", `/v1/jobs/${job.id}/artifacts/final`, { token: id.token });
    assert.ok(
      final.body.artifact.files.some((f: { path: string }) => f.path === "adapter_model.safetensors"),
    );
    const config = await call(api, "GET", `/v1/jobs/${job.id}/artifacts/final/adapter_config.json`, {
      token: id.token,
    });
    assert.equal(config.status, 200);
    assert.equal(config.body.r, 4);
    assert.equal(
      (await call(api, "GET", `/v1/jobs/${job.id}/artifacts/final/../../svc.db`, { token: id.token })).status,
      404,
    );
  });

  it("replays the whole history to late subscribers and resumes from Last-Event-ID or ?lastEventId=", async () => {
    const api = server().apiUrl;
    const id = await newIdentity(api);
    const dataset = await uploadDataset(api, id);
    const job = await createJob(api, id, dataset.id, { maxSteps: 2, saveSteps: 1 });
    const all = await eventsUntilEnd(api, id.token, job.id);
    const late = await readSse(await openEvents(api, id.token, job.id));
    assert.deepEqual(late.frames, all);
    assert.ok(late.closedByServer, "the stream closes after end");
    const resumed = await readSse(await openEvents(api, id.token, job.id, { "last-event-id": "3" }));
    assert.deepEqual(resumed.frames, all.slice(3));
    const byQuery = await readSse(await openEvents(api, id.token, job.id, {}, "?lastEventId=5"));
    assert.deepEqual(byQuery.frames, all.slice(5));
    const bad = await openEvents(api, id.token, job.id, { "last-event-id": "abc" });
    assert.equal(bad.status, 400);
  });

  it("sends ping keep-alives, cancels a running job through its signal and a queued one at once", async () => {
    const api = server().apiUrl;
    const id = await newIdentity(api);
    const dataset = await uploadDataset(api, id);
    const running = await createJob(api, id, dataset.id, { maxSteps: 100000, saveSteps: 100000 });
    const queued = await createJob(api, id, dataset.id, { maxSteps: 2 });
    const stream = openEvents(api, id.token, running.id);
    await until(
      "the job to run",
      async () =>
        (await call(api, "GET", `/v1/jobs/${running.id}`, { token: id.token })).body.job.status === "running",
    );
    const listed = await call(api, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
    assert.deepEqual(
      listed.body.jobs.map((j: { id: string }) => j.id),
      [queued.id, running.id],
      "newest first",
    );

    const cancelQueued = await call(api, "POST", `/v1/jobs/${queued.id}/cancel`, { token: id.token });
    assert.equal(cancelQueued.status, 200);
    assert.equal(cancelQueued.body.job.status, "cancelled");
    assert.deepEqual(types(await eventsUntilEnd(api, id.token, queued.id)), ["training.cancelled", "end"]);
    const again = await call(api, "POST", `/v1/jobs/${queued.id}/cancel`, { token: id.token });
    assert.equal(again.status, 409);

    const reader = readSse(await stream, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 900));
    const cancel = await call(api, "POST", `/v1/jobs/${running.id}/cancel`, { token: id.token });
    assert.equal(cancel.status, 200);
    const read = await reader;
    assert.ok(read.comments.includes("ping"), `pings: ${read.comments.length}`);
    assert.deepEqual(types(read.frames).slice(-2), ["training.cancelled", "end"]);
    assert.equal(types(read.frames)[0], "training.started");
    const after = await call(api, "GET", `/v1/jobs/${running.id}`, { token: id.token });
    assert.equal(after.body.job.status, "cancelled");
  });

  it("hides another org's job, events, artifacts and cancel (404)", async () => {
    const api = server().apiUrl;
    const a = await newIdentity(api);
    const b = await newIdentity(api);
    const job = await createJob(api, a, (await uploadDataset(api, a)).id, { maxSteps: 1 });
    for (const [method, path] of [
      ["GET", `/v1/jobs/${job.id}`],
      ["GET", `/v1/jobs/${job.id}/events`],
      ["GET", `/v1/jobs/${job.id}/artifacts`],
      ["POST", `/v1/jobs/${job.id}/cancel`],
      ["GET", `/v1/jobs?${a.scope}`],
    ]) {
      const reply = await call(api, method, path, { token: b.token });
      assert.equal(reply.status, 404, `${method} ${path}`);
      assert.equal(reply.body.error.code, "not_found");
    }
    await eventsUntilEnd(api, a.token, job.id);
  });

  it("runs a dry run through the data pipeline without training", async () => {
    const api = server().apiUrl;
    const id = await newIdentity(api);
    const dataset = await uploadDataset(api, id);
    const job = await createJob(api, id, dataset.id, {}, { dryRun: true, evalFraction: 0.25 });
    const frames = await eventsUntilEnd(api, id.token, job.id);
    assert.deepEqual(types(frames), ["training.started", "training.completed", "end"]);
    const started = JSON.parse(frames[0].data);
    assert.equal(started.trainExamples + started.evalExamples, 16);
    assert.equal(started.evalExamples, 4);
    assert.deepEqual(JSON.parse(frames[1].data).artifacts, []);

    const evalSet = await uploadDataset(api, id, chatJsonl(5), "eval.jsonl");
    const withEvalSet = await createJob(api, id, dataset.id, {}, { dryRun: true, evalDatasetId: evalSet.id });
    const started2 = JSON.parse((await eventsUntilEnd(api, id.token, withEvalSet.id))[0].data);
    assert.deepEqual([started2.trainExamples, started2.evalExamples], [16, 5]);
    const both = await call(api, "POST", `/v1/jobs?${id.scope}`, {
      token: id.token,
      json: {
        name: "x",
        baseModel: TINY_MODEL,
        datasetId: dataset.id,
        evalDatasetId: evalSet.id,
        evalFraction: 0.1,
      },
    });
    assert.equal(both.status, 400);
    assert.match(both.body.error.message, /"evalFraction" cannot be combined with "evalDatasetId"/);
  });
}
