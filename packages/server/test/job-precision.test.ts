// A job's training precision through `svc server` (SQLite and PostgreSQL):
// POST /v1/jobs `precision` and `baseWeights` (docs/training-precision.md,
// docs/api.md): stored with the job, shown on it, handed to the engine, and
// what ran reported on training.started. Values not understood are refused
// with 400 naming the field. The torch backend takes the same settings.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  call,
  chatJsonl,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  serverFor,
  TINY_MODEL,
  uploadDataset,
} from "./harness.js";

const HP = { lora: { r: 4, alpha: 8 }, batchSize: 4, learningRate: 1e-2, seed: 5 };

// biome-ignore lint/suspicious/noExplicitAny: event payloads are checked field by field below
async function jobEvents(server: ServerProcess, id: Identity, jobId: string): Promise<any[]> {
  const frames = await eventsUntilEnd(server.apiUrl, id.token, jobId, 120_000);
  return frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
}

for (const backend of ["sqlite", "postgres"] as const)
  describe(`a job's training precision (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let dataset: { id: string; rows: number };
    const post = (body: Record<string, unknown>) =>
      call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: {
          name: "precision",
          baseModel: TINY_MODEL,
          datasetId: dataset.id,
          hyperparameters: HP,
          ...body,
        },
      });

    before(async () => {
      server = await serverFor(backend, ["--job-poll-ms", "100"]);
      id = await newIdentity(server.apiUrl);
      dataset = await uploadDataset(server.apiUrl, id, chatJsonl(8));
    });
    after(async () => server?.cleanup());

    it("a bf16 job trains in bf16 and says so on the job and its training.started event", async () => {
      const created = await post({ precision: "bf16", hyperparameters: { ...HP, maxSteps: 3 } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const job = created.body.job;
      assert.equal(job.precision, "bf16");
      assert.equal(job.baseWeights, null);
      assert.equal(job.backend, "auto", "either backend trains in bf16");
      assert.equal(job.hyperparameters.precision, undefined, "lifted out of the hyperparameters");
      const events = await jobEvents(server, id, job.id);
      const started = events.find((e) => e.type === "training.started");
      assert.equal(started?.precision, "bf16");
      assert.equal(started?.baseWeights, "bf16");
      const logs = events.filter((e) => e.type === "training.log");
      assert.deepEqual(
        logs.map((l) => l.step),
        [1, 2, 3],
      );
      assert.ok(
        logs.every((l) => Number.isFinite(l.loss)),
        JSON.stringify(logs.map((l) => l.loss)),
      );
      assert.ok(events.some((e) => e.type === "training.completed"));
      const shown = await call(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token });
      assert.equal(shown.body.job.precision, "bf16");
      console.log(`# ${backend}: bf16 losses ${logs.map((l) => l.loss.toFixed(5)).join(", ")}`);
    });

    it('a job naming no precision asks for "auto", resolved on the worker; an int8 base is reported', async () => {
      const auto = await post({ dryRun: true });
      assert.equal(auto.status, 201, JSON.stringify(auto.body));
      assert.equal(auto.body.job.precision, "auto");
      assert.equal(auto.body.job.backend, "auto", '"auto" runs on either backend');
      const autoStarted = (await jobEvents(server, id, auto.body.job.id)).find(
        (e) => e.type === "training.started",
      );
      assert.ok(["fp32", "bf16"].includes(autoStarted?.precision), JSON.stringify(autoStarted));
      assert.equal(autoStarted?.baseWeights, autoStarted?.precision);

      const int8 = await post({ precision: "fp32", baseWeights: "int8", dryRun: true });
      assert.equal(int8.status, 201, JSON.stringify(int8.body));
      assert.equal(int8.body.job.baseWeights, "int8");
      const started = (await jobEvents(server, id, int8.body.job.id)).find(
        (e) => e.type === "training.started",
      );
      assert.equal(started?.precision, "fp32");
      assert.equal(started?.baseWeights, "int8");
    });

    it("the torch backend takes bf16 and an int8 base: the job is queued for a torch worker", async () => {
      for (const body of [
        { precision: "bf16", backend: "torch" },
        { baseWeights: "int8", backend: "torch" },
        { precision: "bf16", baseWeights: "int8", backend: "torch" },
      ]) {
        const res = await post({ ...body, dryRun: true });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.job.backend, "torch", JSON.stringify(body));
        assert.equal(res.body.job.precision, body.precision ?? "auto");
        assert.equal(res.body.job.baseWeights, body.baseWeights ?? null);
        await call(server.apiUrl, "POST", `/v1/jobs/${res.body.job.id}/cancel`, { token: id.token });
      }
    });

    it("values not understood are refused with 400 naming the field, and nothing is queued", async () => {
      const before = await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ precision: "fp16" }, /"?precision"? must be one of "fp32", "bf16", "auto"/],
        [{ precision: "BF16" }, /precision/],
        [{ precision: 16 }, /precision/],
        [{ baseWeights: "int4" }, /"?baseWeights"? must be one of "int8"/],
        [
          { baseWeights: "int8", backend: "torch", hyperparameters: { ...HP, torchModel: "transformers" } },
          /"baseWeights": "int8" trains svc's decoder on the torch backend/,
        ],
      ];
      for (const [body, message] of cases) {
        const res = await post(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(res.body.error.message, message, JSON.stringify(res.body));
        assert.equal(typeof res.body.error.code, "string");
      }
      const after = await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
      assert.equal(after.body.jobs.length, before.body.jobs.length);
    });
  });
