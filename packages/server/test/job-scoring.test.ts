// GRPO rewards from the trainer (docs/post-training.md#rewards-in-typescript)
// through `svc server`, on SQLite and PostgreSQL, with this test as the
// trainer's scorer over plain HTTP (the SDK's scorer: packages/svc/test/cli/rewards.test.ts):
// a job with `rewards` waits for its scores, trains on the answers and logs
// each reward's mean under its name; bad requests to the scoring routes get the
// right status and error shape and change nothing; an error answer fails the
// step with its message and trains nothing; a job nobody scores pauses with
// reason scorer_gone and resumes when a scorer claims again.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  call,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  until,
  uploadDataset,
} from "./harness.js";

const ROWS = ["red", "green", "blue", "gold"].map((color) => ({
  messages: [{ role: "user", content: `Name a thing that is ${color}.` }],
  color,
}));
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
const GENERATIONS = 2;
const BATCH = 2;
/** The trainer reward these tests compute: the completion's length, as a user's function might. */
const length = (item: { completion: string }) => item.completion.length;

for (const backend of ["sqlite", "postgres"] as const)
  describe(`trainer rewards through the scoring routes (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let other: Identity;
    let dataset: { id: string };
    const api = (identity: Identity, method: string, path: string, json?: unknown) =>
      call(server.apiUrl, method, `${path}${path.includes("?") ? "&" : "?"}${identity.scope}`, {
        token: identity.token,
        ...(json !== undefined ? { json } : {}),
      });
    const grpoJob = async (extra: Record<string, unknown> = {}) => {
      const created = await api(id, "POST", "/v1/jobs", {
        name: "rewarded",
        baseModel: TINY_MODEL,
        datasetId: dataset.id,
        method: "grpo",
        rewards: [{ name: "length" }],
        hyperparameters: {
          lora: { r: 4, alpha: 8 },
          maxSteps: 2,
          batchSize: BATCH,
          numGenerations: GENERATIONS,
          maxCompletionTokens: 4,
          seed: 3,
        },
        ...extra,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.job as { id: string; pausedReason: string | null };
    };
    const claim = (jobId: string, identity = id, wait = 20) =>
      api(identity, "POST", `/v1/jobs/${jobId}/scoring/claim?wait=${wait}`, {});
    const answer = (jobId: string, batchId: string, body: unknown, identity = id) =>
      api(identity, "POST", `/v1/jobs/${jobId}/scoring/${batchId}`, body);
    const refused = (
      reply: { status: number; body: { error: { code: string; message: string } } },
      status: number,
      code: string,
      message?: RegExp,
    ) => {
      assert.equal(reply.status, status, JSON.stringify(reply.body));
      assert.equal(reply.body.error.code, code, JSON.stringify(reply.body));
      assert.equal(typeof reply.body.error.message, "string");
      if (message) assert.match(reply.body.error.message, message);
    };
    /** Claims and answers the job's batches with `length` until it ends; returns the answers' means by step. */
    const score = async (jobId: string) => {
      const means = new Map<number, number>();
      for (;;) {
        const got = await claim(jobId, id, 2);
        if (got.status === 409) return means;
        if (got.status === 204) continue;
        assert.equal(got.status, 200, JSON.stringify(got.body));
        const rewards = got.body.batch.items.map((item: { completion: string }) => [length(item)]);
        means.set(
          got.body.batch.step,
          rewards.reduce((s: number, [r]: number[]) => s + r, 0) / rewards.length,
        );
        assert.equal((await answer(jobId, got.body.batch.id, { rewards })).status, 200);
      }
    };

    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100"], {
        ...process.env,
        SVC_SCORER_TIMEOUT_MS: "3000",
      });
      id = await newIdentity(server.apiUrl);
      other = await newIdentity(server.apiUrl);
      dataset = await uploadDataset(server.apiUrl, id, jsonl(ROWS), "prompts.jsonl");
    });
    after(async () => server?.cleanup());

    it("a job trains on its trainer's answers and logs their mean under the reward's name; bad requests change nothing", async () => {
      const job = await grpoJob();
      const first = await claim(job.id);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const batch = first.body.batch;
      assert.equal(batch.step, 1);
      assert.deepEqual(batch.rewardNames, ["length"]);
      assert.equal(batch.items.length, BATCH * GENERATIONS);
      const item = batch.items[0];
      assert.ok(
        ROWS.some((r) => r.color === item.row.color),
        JSON.stringify(item),
      );
      assert.match(item.prompt, /^Name a thing that is \w+\.$/);
      assert.deepEqual(item.messages, item.row.messages);
      assert.equal(typeof item.completion, "string");

      // Another project's token sees no such job; a wrong job or batch is 404; bad bodies are 400.
      refused(await claim(job.id, other), 404, "not_found");
      refused(await answer(job.id, batch.id, { rewards: [[1]] }, other), 404, "not_found");
      refused(
        await answer(job.id, "0190a0c0-0000-7000-8000-000000000000", { rewards: [[1]] }),
        404,
        "not_found",
      );
      refused(await answer(job.id, "not-a-batch", { rewards: [[1]] }), 404, "not_found");
      const n = batch.items.length;
      const good = batch.items.map((i: { completion: string }) => [length(i)]);
      refused(
        await answer(job.id, batch.id, { rewards: good.slice(1) }),
        400,
        "invalid_rewards",
        /3 score lists for the batch's 4/,
      );
      refused(
        await answer(job.id, batch.id, { rewards: good.map(() => [1, 2]) }),
        400,
        "invalid_rewards",
        /"rewards\[0\]" has 2 numbers; expected 1 \(length\)/,
      );
      refused(
        await answer(job.id, batch.id, { rewards: good.map(() => [null]) }),
        400,
        "invalid_rewards",
        /"rewards\[0\]\[0\]" must be a finite number \(got null\)/,
      );
      refused(
        await answer(job.id, batch.id, { rewards: "high" }),
        400,
        "invalid_request",
        /must be an array/,
      );
      refused(
        await answer(job.id, batch.id, { rewards: good, error: "both" }),
        400,
        "invalid_rewards",
        /exactly one of/,
      );
      refused(
        await answer(job.id, batch.id, { rewards: good, extra: 1 }),
        400,
        "invalid_request",
        /"extra" is not a known field/,
      );
      refused(await answer(job.id, batch.id, {}), 400, "invalid_rewards");
      refused(await claim(job.id, id, 99), 400, "invalid_request", /"wait" \(query parameter\)/);
      // Nothing changed: the batch is still open, and training waits for it.
      assert.equal((await api(id, "GET", `/v1/jobs/${job.id}`)).body.job.status, "running");
      const answered = await answer(job.id, batch.id, { rewards: good });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.deepEqual(answered.body, { batchId: batch.id, step: 1, answered: "rewards" });
      refused(await answer(job.id, batch.id, { rewards: good }), 409, "batch_answered");
      const means = await score(job.id);
      means.set(1, good.reduce((s: number, [r]: number[]) => s + r, 0) / n);

      const events = (await eventsUntilEnd(server.apiUrl, id.token, job.id, 120_000))
        .filter((f) => f.event !== "ping")
        .map((f) => JSON.parse(f.data));
      assert.ok(
        events.some((e) => e.type === "training.completed"),
        JSON.stringify(events.at(-2)),
      );
      const logs = events.filter((e) => e.type === "training.log");
      assert.deepEqual(
        logs.map((e) => e.step),
        [1, 2],
      );
      for (const log of logs) {
        assert.ok(Math.abs(log.grpo.rewards.length - means.get(log.step)!) < 1e-9, JSON.stringify(log.grpo));
        assert.equal(log.grpo.reward, log.grpo.rewards.length);
      }
      refused(await claim(job.id), 409, "job_finished");
    });

    it("an error answer fails the step with its message and trains nothing; a job without trainer rewards has nothing to score", async () => {
      const job = await grpoJob();
      const got = await claim(job.id);
      assert.equal(got.status, 200, JSON.stringify(got.body));
      const message = `row ${got.body.batch.items[1].rowNumber}: reward "length" threw: boom; nothing was trained on this step`;
      assert.equal((await answer(job.id, got.body.batch.id, { error: message })).status, 200);
      const events = (await eventsUntilEnd(server.apiUrl, id.token, job.id, 60_000))
        .filter((f) => f.event !== "ping")
        .map((f) => JSON.parse(f.data));
      const failed = events.find((e) => e.type === "training.failed");
      assert.ok(failed, JSON.stringify(events));
      assert.equal(failed.error, `step 1: scoring failed: ${message}`);
      assert.equal(events.filter((e) => e.type === "training.log").length, 0);
      assert.equal((await api(id, "GET", `/v1/jobs/${job.id}/artifacts`)).body.artifacts.length, 0);

      const sft = await api(id, "POST", "/v1/jobs", {
        name: "grader only",
        baseModel: TINY_MODEL,
        datasetId: dataset.id,
        method: "grpo",
        graders: [
          {
            grader: {
              type: "string_check",
              name: "red",
              operation: "like",
              input: "{{sample.output_text}}",
              reference: "red",
            },
          },
        ],
        hyperparameters: { maxSteps: 1, numGenerations: 2, maxCompletionTokens: 2 },
      });
      assert.equal(sft.status, 201, JSON.stringify(sft.body));
      refused(await claim(sft.body.job.id), 409, "no_trainer_rewards");
    });

    it("POST /v1/jobs refuses bad rewards naming the field", async () => {
      const post = (extra: Record<string, unknown>) =>
        api(id, "POST", "/v1/jobs", {
          name: "bad",
          baseModel: TINY_MODEL,
          datasetId: dataset.id,
          method: "grpo",
          hyperparameters: { maxSteps: 1 },
          ...extra,
        });
      refused(
        await post({ rewards: [{ name: "has space" }] }),
        400,
        "invalid_request",
        /"rewards\[0\]\.name"/,
      );
      refused(
        await post({ rewards: [{ name: "a" }, { name: "a" }] }),
        400,
        "invalid_request",
        /"rewards\[1\]\.name": "a" is named twice/,
      );
      refused(await post({ rewards: [] }), 400, "invalid_request", /"rewards" must not be empty/);
      refused(
        await post({ rewards: [{ name: "a", weight: "x" }] }),
        400,
        "invalid_request",
        /"rewards\[0\]\.weight"/,
      );
      refused(
        await post({
          rewards: [{ name: "red" }],
          graders: [
            {
              grader: {
                type: "string_check",
                name: "red",
                operation: "eq",
                input: "{{sample.output_text}}",
                reference: "red",
              },
            },
          ],
        }),
        400,
        "invalid_request",
        /"rewards\[0\]\.name": "red" is named twice/,
      );
      const sft = await api(id, "POST", "/v1/jobs", {
        name: "bad",
        baseModel: TINY_MODEL,
        datasetId: dataset.id,
        rewards: [{ name: "a" }],
      });
      refused(sft, 400, "invalid_request", /"rewards" reward a GRPO job/);
    });

    it("a job whose scorer is gone pauses with reason scorer_gone, and a claim resumes it to completion", async () => {
      const job = await grpoJob();
      assert.equal(job.pausedReason, null);
      // A scorer polls once (it may get step 1's batch already, and never answers it), then is gone.
      assert.ok([200, 204].includes((await claim(job.id, id, 0)).status));
      await until(
        "the job to pause for its scorer",
        async () => (await api(id, "GET", `/v1/jobs/${job.id}`)).body.job.status === "paused",
        60_000,
      );
      const shown = (await api(id, "GET", `/v1/jobs/${job.id}`)).body.job;
      assert.equal(shown.pausedReason, "scorer_gone");
      const means = await score(job.id);
      assert.deepEqual([...means.keys()].sort(), [1, 2]);
      const events = (await eventsUntilEnd(server.apiUrl, id.token, job.id, 60_000))
        .filter((f) => f.event !== "ping")
        .map((f) => JSON.parse(f.data));
      const paused = events.find((e) => e.type === "training.paused");
      assert.equal(paused.reason, "scorer_gone");
      assert.ok(events.some((e) => e.type === "training.resumed"));
      assert.ok(events.some((e) => e.type === "training.completed"));
      assert.equal((await api(id, "GET", `/v1/jobs/${job.id}`)).body.job.pausedReason, null);
    });
  });
