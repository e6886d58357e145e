// transformers + peft in place of svc's decoder on the torch backend
// (hyperparameters.torchModel "transformers", svc_trainer/hf.py): on a tiny
// random Llama the same first-step loss as svc's own torch model (1e-5) and
// the same adapter after a few steps, in the shared format the engine and
// peft read; a whole job through `svc server` and `svc worker --backend
// torch`; and the API refuses the setting for a job that may not run on the
// torch backend. Needs a Python with torch, transformers and peft (SVC_PYTHON,
// else python3 on the PATH); skipped, saying so, where there is none.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type DatasetRow, loadModel, prepareSets, type TrainHyperparameters } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import type { TorchModel } from "@svc/wire";
import { writeTorchJob } from "../src/worker/torch-job.js";
import { call, chatJsonl, TINY_MODEL, uploadDataset } from "./harness.js";
import {
  checkpointSteps,
  completedTorchLogs,
  FIXTURES,
  findPython,
  largestAdapterDifference,
  runTrainer,
  torchCluster,
  torchScratch,
  trainerEvents,
} from "./torch-harness.js";

const scratch = torchScratch("hf");

const { python: PYTHON, skip } = findPython(
  "import torch, transformers, peft",
  "has torch, transformers and peft",
);

const rows: DatasetRow[] = Array.from({ length: 24 }, (_, i) => ({
  messages: [
    { role: "user", content: `Name ${i} in words ${"please ".repeat(i % 3)}` },
    { role: "assistant", content: `number ${i}${i % 4 === 0 ? "!" : ""}` },
  ],
}));

const hyperparameters: TrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
  maxSteps: 5,
  batchSize: 4,
  gradientAccumulationSteps: 2,
  learningRate: 5e-3,
  warmupSteps: 2,
  lrSchedulerType: "cosine",
  weightDecay: 0.01,
  evalSteps: 5,
  saveSteps: 3,
  seed: 9,
  maxLength: 40,
};

async function runTorch(
  fixture: string,
  torchModel: TorchModel,
  { gradientCheckpointing = false, resumeFrom = null as string | null } = {},
) {
  const model = await loadModel(join(FIXTURES, fixture));
  const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
    model,
    prepared: prepareSets(model.tokenizer, rows.slice(0, 18), rows.slice(18), hyperparameters),
    hyperparameters,
    outputDir: mkdtempSync(join(scratch, "out-")),
    resumeFrom,
    threads: 1,
    torchModel,
    gradientCheckpointing,
  });
  const [{ code, out, err }] = await runTrainer(PYTHON, file);
  assert.equal(code, 0, err);
  const events = trainerEvents(out);
  const losses = events.filter((e) => e.type === "progress").map((e) => e.progress);
  const checkpoints = events.filter((e) => e.type === "checkpoint").map((e) => e.dir as string);
  return { losses, checkpoints, result: events.find((e) => e.type === "result").result };
}

describe("transformers + peft on the torch backend", {
  skip: skip && needs("transformers/peft", skip),
}, () => {
  it("trains a Llama as svc's torch model does: first-step loss, adapter, the shared format", async () => {
    const own = await runTorch("gqa-untied-f32", "svc");
    const peft = await runTorch("gqa-untied-f32", "transformers");
    assert.equal(peft.losses.length, 5);
    assert.ok(
      Math.abs(own.losses[0].loss - peft.losses[0].loss) < 1e-5,
      `first-step loss: svc ${own.losses[0].loss}, transformers ${peft.losses[0].loss}`,
    );
    for (let i = 1; i < 5; i++)
      assert.ok(
        Math.abs(own.losses[i].loss - peft.losses[i].loss) / own.losses[i].loss < 1e-4,
        `step ${i + 1}`,
      );
    assert.ok(Math.abs(own.losses[4].evalLoss - peft.losses[4].evalLoss) / own.losses[4].evalLoss < 1e-4);
    const { worst, a, b } = largestAdapterDifference(own.result.adapterDir, peft.result.adapterDir);
    assert.deepEqual(b.spec, a.spec);
    assert.ok(worst < 1e-4, `largest adapter difference ${worst}`);
    // peft itself loads the adapter onto transformers' model, every factor by name.
    const check = spawnSync(
      PYTHON,
      [
        "-c",
        `import sys, torch, transformers, peft
base = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
model = peft.PeftModel.from_pretrained(base, sys.argv[2])
from safetensors.torch import load_file
saved = load_file(sys.argv[2] + "/adapter_model.safetensors")
state = {k.replace(".default", ""): v for k, v in model.state_dict().items() if "lora_" in k}
assert sorted(state) == sorted(saved), (sorted(state)[:3], sorted(saved)[:3])
print(max(float((state[k] - saved[k]).abs().max()) for k in saved))`,
        join(FIXTURES, "gqa-untied-f32"),
        peft.result.adapterDir,
      ],
      { encoding: "utf8" },
    );
    assert.equal(check.status, 0, check.stderr);
    assert.equal(Number(check.stdout.trim()), 0);
  });

  it("resumes svc's checkpoint on transformers + peft and goes on to the same losses", async () => {
    const own = await runTorch("gqa-untied-f32", "svc");
    assert.equal(own.checkpoints.length, 1);
    const resumed = await runTorch("gqa-untied-f32", "transformers", { resumeFrom: own.checkpoints[0] });
    assert.deepEqual(
      resumed.losses.map((l) => l.step),
      [4, 5],
    );
    for (let i = 0; i < 2; i++)
      assert.ok(
        Math.abs(own.losses[3 + i].loss - resumed.losses[i].loss) / own.losses[3 + i].loss < 1e-4,
        `step ${4 + i}: svc ${own.losses[3 + i].loss}, resumed ${resumed.losses[i].loss}`,
      );
  });

  it("recomputes activations with transformers' gradient checkpointing without changing the training", async () => {
    const plain = await runTorch("gqa-untied-f32", "transformers");
    const recomputed = await runTorch("gqa-untied-f32", "transformers", { gradientCheckpointing: true });
    for (let i = 0; i < 5; i++)
      assert.ok(
        Math.abs(plain.losses[i].loss - recomputed.losses[i].loss) / plain.losses[i].loss < 1e-6,
        `step ${i + 1}`,
      );
  });

  describe("through svc server and svc worker --backend torch", () => {
    const cluster = torchCluster("torch-hf");

    it("refuses torchModel for a job that may run on the engine, and an unknown value, naming the field", async () => {
      const dataset = await uploadDataset(cluster.server.apiUrl, cluster.id, chatJsonl(8));
      for (const [extra, torchModel, pattern] of [
        [
          {},
          "transformers",
          /"hyperparameters.torchModel": "transformers" builds the model on the torch backend only/,
        ],
        [{ backend: "auto" }, "transformers", /set "backend": "torch"/],
        [{ backend: "torch" }, "keras", /hyperparameters.torchModel/],
      ] as const) {
        const reply = await call(cluster.server.apiUrl, "POST", `/v1/jobs?${cluster.id.scope}`, {
          token: cluster.id.token,
          json: {
            name: "x",
            baseModel: TINY_MODEL,
            datasetId: dataset.id,
            hyperparameters: { lora: { r: 4, alpha: 8 }, maxSteps: 2, torchModel },
            ...extra,
          },
        });
        assert.equal(reply.status, 400, JSON.stringify(reply.body));
        assert.match(reply.body.error.message, pattern);
      }
      const list = await call(cluster.server.apiUrl, "GET", `/v1/jobs?${cluster.id.scope}`, {
        token: cluster.id.token,
      });
      assert.equal(list.body.jobs.length, 0, "nothing was created");
    });

    it("trains a job with transformers + peft: the engine's events and a final adapter", async () => {
      const created = await cluster.createTorchJob(
        { maxSteps: 3, saveSteps: 3, torchModel: "transformers" },
        { evalFraction: 0.25 },
      );
      await cluster.startWorker(PYTHON);
      const frames = await cluster.eventsUntilEnd(created.id, 180_000);
      const logs = completedTorchLogs(frames, 3);
      assert.ok(logs.at(-1).evalLoss > 0);
      assert.deepEqual(checkpointSteps(frames), [3]);
      const reply = await fetch(
        `${cluster.server.apiUrl}/v1/jobs/${created.id}/artifacts/final/adapter_config.json`,
        {
          headers: { authorization: `Bearer ${cluster.id.token}` },
        },
      );
      assert.equal(reply.status, 200);
      const config = (await reply.json()) as Record<string, unknown>;
      assert.equal(config.peft_type, "LORA");
      assert.equal(config.r, 4);
    });
  });
});
