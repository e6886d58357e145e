// A torch job that starts from another torch job's adapter (startAdapter,
// docs/api.md#starting-from-an-adapter), through `svc server` and `svc worker
// --backend torch` (Debian's python3-torch on the CPU): its first logged loss,
// on one batch of the same rows as the first job's eval set, is that job's
// final eval loss, not the base model's.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { needs } from "@svc/engine/testing";
import { call, chatJsonl, createJob, eventsUntilEnd, uploadDataset } from "./harness.js";
import { hasTorch, TORCH_PYTHON, torchCluster, trainingLogs } from "./torch-harness.js";

const ROWS = 8;
const HP = {
  lora: { r: 4, alpha: 8 },
  batchSize: ROWS,
  learningRate: 2e-2,
  evalSteps: 3,
  saveSteps: 3,
  seed: 3,
};

describe("torch jobs from an adapter", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, () => {
  const cluster = torchCluster("torch-start");

  it("a torch job from a torch job's final adapter starts at its final eval loss", async () => {
    await cluster.startWorker(TORCH_PYTHON);
    const { apiUrl } = cluster.server;
    const dataset = await uploadDataset(apiUrl, cluster.id, chatJsonl(ROWS));
    const run = async (hyperparameters: Record<string, unknown>, extra: Record<string, unknown>) => {
      const job = await createJob(apiUrl, cluster.id, dataset.id, hyperparameters, {
        evalDatasetId: dataset.id,
        ...extra,
      });
      const frames = await eventsUntilEnd(apiUrl, cluster.id.token, job.id, 180_000);
      assert.equal(
        frames.at(-2)?.event,
        "training.completed",
        frames
          .map((f) => f.data)
          .join("\n")
          .slice(-1500),
      );
      return { job, logs: trainingLogs(frames) };
    };
    const first = await run({ ...HP, maxSteps: 6 }, { backend: "torch" });
    const finalEval = first.logs.at(-1).evalLoss as number;
    const startAdapter = { kind: "final", jobId: first.job.id };
    const second = await run(
      { batchSize: ROWS, maxSteps: 1, seed: 3, lora: undefined },
      { backend: "torch", startAdapter },
    );
    const shown = await call(apiUrl, "GET", `/v1/jobs/${second.job.id}`, { token: cluster.id.token });
    assert.equal(shown.body.job.backend, "torch");
    assert.deepEqual(shown.body.job.startAdapter, startAdapter);
    assert.equal(shown.body.job.hyperparameters.lora.r, 4);
    console.log(
      `# torch: base loss ${first.logs[0].loss.toFixed(5)}, final eval loss ${finalEval.toFixed(5)}, ` +
        `from the adapter: first loss ${second.logs[0].loss.toFixed(5)}`,
    );
    assert.ok(Math.abs(second.logs[0].loss - finalEval) < 1e-3, `${second.logs[0].loss} vs ${finalEval}`);
    assert.ok(first.logs[0].loss - second.logs[0].loss > 0.05, "well below the base model's loss");
  });
});
