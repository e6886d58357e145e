// The official `openai` client's fineTuning.jobs.pause and .resume against
// `svc server` (SQLite and PostgreSQL): a running job is paused (status
// "paused", a "The job was paused at step N" event), resumed, and succeeds;
// resuming a job that is not paused is OpenAI's 409 error body
// (docs/openai-fine-tuning.md). svc's own routes: job-pause.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import { APIError, toFile } from "openai";
import {
  chatJsonl,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  until,
} from "./harness.js";
import { openAiClient } from "./openai-client.js";

for (const backend of ["sqlite", "postgres"] as const)
  describe(`OpenAI fine-tuning pause and resume (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let client: OpenAI;
    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100"]);
      id = await newIdentity(server.apiUrl);
      client = openAiClient(server, id);
    });
    after(async () => server?.cleanup());

    it("pauses a running job and resumes it to success", async () => {
      const file = await client.files.create({
        file: await toFile(Buffer.from(chatJsonl(8)), "train.jsonl"),
        purpose: "fine-tune",
      });
      const job = await client.fineTuning.jobs.create({
        model: TINY_MODEL,
        training_file: file.id,
        hyperparameters: { n_epochs: 40, batch_size: 1 },
      });
      const svcId = job.id.replace(/^ftjob-/, "");
      await readSse(await openEvents(server.apiUrl, id.token, svcId), {
        stopWhen: (f) => f.event === "training.log",
        timeoutMs: 60_000,
      });
      const pausing = await client.fineTuning.jobs.pause(job.id);
      assert.equal(pausing.object, "fine_tuning.job");
      assert.ok(["running", "paused"].includes(pausing.status as string), pausing.status);
      await until(
        "the job to be paused",
        async () => ((await client.fineTuning.jobs.retrieve(job.id)).status as string) === "paused",
        60_000,
      );
      const messages = [];
      for await (const event of client.fineTuning.jobs.listEvents(job.id)) messages.push(event.message);
      assert.ok(
        messages.some((m) => /^The job was paused at step \d+$/.test(m)),
        JSON.stringify(messages.slice(0, 5)),
      );
      const resumed = await client.fineTuning.jobs.resume(job.id);
      assert.ok(["queued", "running"].includes(resumed.status), resumed.status);
      await eventsUntilEnd(server.apiUrl, id.token, svcId, 180_000);
      const done = await client.fineTuning.jobs.retrieve(job.id);
      assert.equal(done.status, "succeeded", JSON.stringify(done.error));
      const error = await client.fineTuning.jobs.resume(job.id).then(
        () => assert.fail("a finished job was resumed"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof APIError);
      assert.equal(error.status, 409);
      assert.equal((error.error as { code: string }).code, "job_not_paused");
      assert.deepEqual(Object.keys(error.error as object).sort(), ["code", "message", "param", "type"]);
    });
  });
