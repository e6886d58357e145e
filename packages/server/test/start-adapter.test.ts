// A job that starts from another job's adapter, through `svc server` (SQLite
// and PostgreSQL): POST /v1/jobs `startAdapter` (final or a checkpoint; the
// OpenAI API's ft: models: openai-start-adapter.test.ts). The proof that the weights carried over: the new job's first
// logged loss, on the same rows as the first job's eval set (one batch of
// them all), equals that job's eval loss at the adapter's step, not the
// base model's loss. Mismatched base models, LoRA shapes, methods and
// backends are refused with the field named (docs/api.md#starting-from-an-adapter).
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
  tinyModel,
  uploadDataset,
} from "./harness.js";

const ROWS = 8;
// One batch of every row, evaluated on those same rows: a step's training loss
// (taken before its update) is then the eval loss of the weights it starts from.
const HP = {
  lora: { r: 4, alpha: 8 },
  batchSize: ROWS,
  learningRate: 2e-2,
  evalSteps: 3,
  saveSteps: 3,
  seed: 3,
};

type Log = { step: number; loss: number; evalLoss: number | null };

async function trainedLogs(server: ServerProcess, id: Identity, jobId: string): Promise<Log[]> {
  const frames = await eventsUntilEnd(server.apiUrl, id.token, jobId, 120_000);
  const events = frames.filter((f) => f.event !== "ping").map((f) => JSON.parse(f.data));
  assert.ok(
    events.some((e) => e.type === "training.completed"),
    JSON.stringify(events.at(-2)),
  );
  return events.filter((e) => e.type === "training.log");
}

const close = (a: number, b: number, what: string) =>
  assert.ok(Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

for (const backend of ["sqlite", "postgres"] as const)
  describe(`jobs that start from an adapter (${backend})`, () => {
    let server: ServerProcess & { cleanup(): Promise<void> };
    let id: Identity;
    let dataset: { id: string; rows: number };
    let first: { id: string; logs: Log[] };
    const post = (body: Record<string, unknown>) =>
      call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: {
          name: "from an adapter",
          baseModel: TINY_MODEL,
          datasetId: dataset.id,
          evalDatasetId: dataset.id,
          ...body,
        },
      });

    before(async () => {
      // A second name for the tiny model: another base model to refuse.
      server = await serverFor(backend, [
        "--job-poll-ms",
        "100",
        "--model",
        `test/other=${await tinyModel()}`,
      ]);
      id = await newIdentity(server.apiUrl);
      dataset = await uploadDataset(server.apiUrl, id, chatJsonl(ROWS));
      const created = await post({ hyperparameters: { ...HP, maxSteps: 6 } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.job.startAdapter, null);
      first = { id: created.body.job.id, logs: await trainedLogs(server, id, created.body.job.id) };
    });
    after(async () => server?.cleanup());

    it("a job from a final adapter starts at the first job's final loss, with a fresh step count", async () => {
      const created = await post({
        hyperparameters: { batchSize: ROWS, learningRate: 2e-2, maxSteps: 2, seed: 3 },
        startAdapter: { kind: "final", jobId: first.id },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const job = created.body.job;
      assert.deepEqual(job.startAdapter, { kind: "final", jobId: first.id });
      assert.deepEqual(job.hyperparameters.lora.r, 4, "the adapter's rank, not DEFAULT_LORA's");
      assert.equal(job.hyperparameters.lora.alpha, 8);
      assert.equal(job.backend, "auto", "either backend starts from an adapter");
      const logs = await trainedLogs(server, id, job.id);
      assert.deepEqual(
        logs.map((l) => l.step),
        [1, 2],
      );
      const finalEval = first.logs.at(-1)?.evalLoss as number;
      console.log(
        `# ${backend}: base loss ${first.logs[0].loss.toFixed(5)}, first job's final eval loss ${finalEval.toFixed(5)}, ` +
          `second job's first loss ${logs[0].loss.toFixed(5)}`,
      );
      close(logs[0].loss, finalEval, "the first step's loss is the adapter's eval loss");
      assert.ok(first.logs[0].loss - logs[0].loss > 0.05, "well below the base model's loss");
    });

    it("a job from a checkpoint starts at that step's eval loss", async () => {
      const created = await post({
        hyperparameters: { batchSize: ROWS, maxSteps: 1, seed: 3 },
        startAdapter: { kind: "checkpoint", jobId: first.id, step: 3 },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const logs = await trainedLogs(server, id, created.body.job.id);
      const atStep3 = first.logs.find((l) => l.step === 3)?.evalLoss as number;
      close(logs[0].loss, atStep3, "the first step's loss is checkpoint 3's eval loss");
    });

    it("refuses another base model, another LoRA shape and missing adapters", async () => {
      const refused = async (body: Record<string, unknown>, message: RegExp) => {
        const reply = await post({ hyperparameters: { maxSteps: 1 }, ...body });
        assert.equal(reply.status, 400, JSON.stringify(reply.body));
        assert.match(reply.body.error.message, message);
        return reply.body.error;
      };
      const final = { kind: "final", jobId: first.id };
      const base = await refused(
        { baseModel: "test/other", startAdapter: final },
        /^"baseModel": .*test\/tiny/,
      );
      assert.equal(base.code, "base_model_mismatch");
      await refused(
        { hyperparameters: { maxSteps: 1, lora: { r: 8, alpha: 8 } }, startAdapter: final },
        /^"hyperparameters.lora.r": 8 differs from the start adapter's 4/,
      );
      await refused(
        {
          hyperparameters: { maxSteps: 1, lora: { r: 4, alpha: 8, targetModules: ["q_proj"] } },
          startAdapter: final,
        },
        /^"hyperparameters.lora.targetModules"/,
      );
      // a DPO job may start from it (dpo-start-adapter.test.ts): what refuses this one is its chat dataset
      await refused(
        { method: "dpo", startAdapter: final },
        /^"datasetId": method "dpo" trains on preference pairs/,
      );
      const torch = await post({ hyperparameters: { maxSteps: 1 }, backend: "torch", startAdapter: final });
      assert.equal(
        torch.status,
        201,
        "the torch backend starts from an adapter too (torch-start-adapter.test.ts)",
      );
      assert.equal(torch.body.job.backend, "torch");
      await call(server.apiUrl, "POST", `/v1/jobs/${torch.body.job.id}/cancel`, {
        token: id.token,
        json: {},
      });
      const missing = await refused(
        { startAdapter: { kind: "checkpoint", jobId: first.id, step: 4 } },
        /^"startAdapter.step": .* no checkpoint at step 4/,
      );
      assert.equal(missing.code, "adapter_not_found");
      await refused(
        { startAdapter: { kind: "final", jobId: "0192f2a4-7b1c-7d3e-8f00-0123456789ab" } },
        /^"startAdapter.jobId": no job/,
      );
      await refused({ startAdapter: { kind: "last", jobId: first.id } }, /^"startAdapter/);
      // Another project's job is not found either.
      const stranger = await newIdentity(server.apiUrl, "other");
      const reply = await call(server.apiUrl, "POST", `/v1/jobs?${stranger.scope}`, {
        token: stranger.token,
        json: {
          name: "x",
          baseModel: TINY_MODEL,
          datasetId: (await uploadDataset(server.apiUrl, stranger)).id,
          startAdapter: final,
        },
      });
      assert.equal(reply.status, 400);
      assert.match(reply.body.error.message, /^"startAdapter.jobId": no job/);
    });
  });
