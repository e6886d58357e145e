// transformers + peft in place of svc's decoder on the torch backend
// (hyperparameters.torchModel "transformers", svc_trainer/hf.py): on a tiny
// random Llama the same first-step loss as svc's own torch model (1e-5) and
// the same adapter after a few steps, in the shared format the engine and
// peft read; a whole job through `svc server` and `svc worker --backend
// torch`; and the API refuses the setting for a job that may not run on the
// torch backend. Needs a Python with torch, transformers and peft (SVC_PYTHON,
// else python3 on the PATH); skipped, saying so, where there is none.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type DatasetRow, loadAdapter, loadModel, prepareSets, type TrainHyperparameters } from "@svc/engine";
import type { TorchModel } from "../src/wire.js";
import { TRAINER_TORCH_DIR, writeTorchJob } from "../src/worker/torch-job.js";
import {
  call,
  chatJsonl,
  createJob,
  createPgDatabase,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  spawnReady,
  startServerProcess,
  TINY_MODEL,
  tempDir,
  tinyModel,
  uploadDataset,
  waitForExit,
} from "./harness.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "../../../engine/fixtures");
const scratch = mkdtempSync(join(tmpdir(), "svc-hf-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function peftPython(): { python: string } | { skip: string } {
  const candidates = [
    ...(process.env.SVC_PYTHON ? [process.env.SVC_PYTHON] : []),
    "python3",
    "/usr/bin/python3",
  ];
  const why: string[] = [];
  for (const python of candidates) {
    const probe = spawnSync(python, ["-c", "import torch, transformers, peft"], { encoding: "utf8" });
    if (probe.status === 0) return { python };
    why.push(`${python}: ${probe.error?.message ?? probe.stderr.trim().split("\n").pop()}`);
  }
  return { skip: `no Python here has torch, transformers and peft (${why.join("; ")})` };
}
const found = peftPython();
const skip = "skip" in found && found.skip;
const PYTHON = "python" in found ? found.python : "";

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
  const child = spawn(PYTHON, ["-m", "svc_trainer", "--input", file, "--device", "cpu"], {
    cwd: TRAINER_TORCH_DIR,
    env: { ...process.env, PYTHONPATH: TRAINER_TORCH_DIR },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (err += c));
  const code = await new Promise((resolve) => child.once("close", resolve));
  assert.equal(code, 0, err);
  const events = out
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  const losses = events.filter((e) => e.type === "progress").map((e) => e.progress);
  const checkpoints = events.filter((e) => e.type === "checkpoint").map((e) => e.dir as string);
  return { losses, checkpoints, result: events.find((e) => e.type === "result").result };
}

describe("transformers + peft on the torch backend", { skip }, () => {
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
    const a = loadAdapter(own.result.adapterDir);
    const b = loadAdapter(peft.result.adapterDir);
    assert.deepEqual(b.spec, a.spec);
    assert.deepEqual([...b.tensors.keys()].sort(), [...a.tensors.keys()].sort());
    let worst = 0;
    for (const [name, values] of a.tensors) {
      const other = b.tensors.get(name)!;
      for (let i = 0; i < values.length; i++) worst = Math.max(worst, Math.abs(values[i] - other[i]));
    }
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
    let database: Awaited<ReturnType<typeof createPgDatabase>>;
    let dataDir: string;
    let server: ServerProcess;
    let id: Identity;
    let worker: Awaited<ReturnType<typeof spawnReady>> | undefined;

    before(async () => {
      database = await createPgDatabase();
      dataDir = tempDir("torch-hf");
      server = await startServerProcess({
        dataDir,
        databaseUrl: database.url,
        args: ["--workers", "0", "--job-lease-ms", "3000", "--job-poll-ms", "100"],
      });
      id = await newIdentity(server.apiUrl);
    });
    after(async () => {
      if (worker && worker.proc.exitCode === null) worker.proc.kill("SIGKILL");
      if (worker) await waitForExit(worker.proc);
      await server?.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("refuses torchModel for a job that may run on the engine, and an unknown value, naming the field", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(8));
      for (const [extra, torchModel, pattern] of [
        [
          {},
          "transformers",
          /"hyperparameters.torchModel": "transformers" builds the model on the torch backend only/,
        ],
        [{ backend: "auto" }, "transformers", /set "backend": "torch"/],
        [{ backend: "torch" }, "keras", /hyperparameters.torchModel/],
      ] as const) {
        const reply = await call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
          token: id.token,
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
      const list = await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
      assert.equal(list.body.jobs.length, 0, "nothing was created");
    });

    it("trains a job with transformers + peft: the engine's events and a final adapter", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
      const created = await createJob(
        server.apiUrl,
        id,
        dataset.id,
        { maxSteps: 3, saveSteps: 3, torchModel: "transformers" },
        { backend: "torch", evalFraction: 0.25 },
      );
      worker = await spawnReady("worker", [
        "--database-url",
        database.url,
        "--data-dir",
        dataDir,
        "--bundled-models",
        "none",
        "--model",
        `${TINY_MODEL}=${await tinyModel()}`,
        "--job-poll-ms",
        "100",
        "--job-lease-ms",
        "3000",
        "--backend",
        "torch",
        "--python",
        PYTHON,
      ]);
      const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 180_000);
      const events = frames.map((f) => f.event);
      assert.equal(events[0], "training.started", frames.map((f) => f.data).join("\n"));
      assert.equal(events.at(-2), "training.completed", frames.map((f) => f.data).join("\n"));
      const logs = frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
      assert.deepEqual(
        logs.map((l) => l.step),
        [1, 2, 3],
      );
      for (const log of logs) {
        assert.ok(Number.isFinite(log.loss) && log.loss > 0, JSON.stringify(log));
        assert.equal(log.backend, "torch");
      }
      assert.ok(logs.at(-1).evalLoss > 0);
      assert.deepEqual(
        frames.filter((f) => f.event === "checkpoint.saved").map((f) => JSON.parse(f.data).step),
        [3],
      );
      const reply = await fetch(
        `${server.apiUrl}/v1/jobs/${created.id}/artifacts/final/adapter_config.json`,
        {
          headers: { authorization: `Bearer ${id.token}` },
        },
      );
      assert.equal(reply.status, 200);
      const config = (await reply.json()) as Record<string, unknown>;
      assert.equal(config.peft_type, "LORA");
      assert.equal(config.r, 4);
    });
  });
});
