// FSDP on the torch backend (svc_trainer/fsdp.py): two gloo processes on the
// CPU, the frozen base sharded between them, train as one process does with
// the same global batch — the same first-step loss (1e-5) and the same final
// adapter, which the engine reads. Needs a Python with PyTorch 2.7 or later
// (SVC_PYTHON, else python3 on the PATH); skipped, saying so, where there is
// none. Debian's torch 1.13 refuses an FSDP job by name; a whole job runs through
// `svc server` and `svc worker --backend torch --device cpu --gpus 2 --fsdp`.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type DatasetRow, loadAdapter, loadModel, prepareSets, type TrainHyperparameters } from "@svc/engine";
import { TRAINER_TORCH_DIR, writeTorchJob } from "../src/worker/torch-job.js";
import {
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
const scratch = mkdtempSync(join(tmpdir(), "svc-fsdp-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The first interpreter whose torch shards with fully_shard (the trainer's own test), or why none does. */
function fsdpPython(): { python: string } | { skip: string } {
  const candidates = [
    ...(process.env.SVC_PYTHON ? [process.env.SVC_PYTHON] : []),
    "python3",
    "/usr/bin/python3",
  ];
  const why: string[] = [];
  for (const python of candidates) {
    const probe = spawnSync(
      python,
      ["-c", "from svc_trainer.fsdp import fully_shard_api; fully_shard_api()"],
      {
        cwd: TRAINER_TORCH_DIR,
        encoding: "utf8",
      },
    );
    if (probe.status === 0) return { python };
    why.push(`${python}: ${probe.error?.message ?? probe.stderr.trim().split("\n").pop()}`);
  }
  return { skip: `no Python here can run FSDP (${why.join("; ")})` };
}
const found = fsdpPython();
const debianTorch =
  spawnSync("/usr/bin/python3", ["-c", "import torch, sys; sys.exit(0 if torch.__version__ < '2' else 1)"])
    .status === 0;

const rows: DatasetRow[] = Array.from({ length: 28 }, (_, i) => ({
  messages: [
    { role: "user", content: `What is ${i} times ${i % 5}? ${"hm ".repeat(i % 4)}` },
    { role: "assistant", content: `${i * (i % 5)}` },
  ],
}));

interface Run {
  losses: number[];
  evalLoss: number | null;
  adapterDir: string | null;
  error: string | null;
}

async function runTorch(
  python: string,
  hyperparameters: TrainHyperparameters,
  world: number,
  fsdp: boolean,
  more: { gradientCheckpointing?: boolean; packing?: boolean } = {},
) {
  const model = await loadModel(join(FIXTURES, "qwen3-v5-bf16"));
  const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
    model,
    prepared: prepareSets(model.tokenizer, rows.slice(0, 22), rows.slice(22), hyperparameters),
    hyperparameters,
    outputDir: mkdtempSync(join(scratch, "out-")),
    resumeFrom: null,
    threads: 1,
    fsdp,
    ...more,
  });
  const port = 30500 + (process.pid % 1000);
  const outputs = await Promise.all(
    Array.from({ length: world }, (_, rank) => {
      const child = spawn(python, ["-m", "svc_trainer", "--input", file, "--device", "cpu"], {
        cwd: TRAINER_TORCH_DIR,
        env: {
          ...process.env,
          PYTHONPATH: TRAINER_TORCH_DIR,
          ...(world > 1
            ? {
                RANK: String(rank),
                WORLD_SIZE: String(world),
                MASTER_ADDR: "127.0.0.1",
                MASTER_PORT: String(port),
              }
            : {}),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (c) => (out += c));
      child.stderr.resume();
      return new Promise<string>((resolve) => child.once("close", () => resolve(out)));
    }),
  );
  const run: Run = { losses: [], evalLoss: null, adapterDir: null, error: null };
  for (const line of outputs[0].trim().split("\n")) {
    const event = JSON.parse(line);
    if (event.type === "progress") {
      run.losses.push(event.progress.loss);
      run.evalLoss = event.progress.evalLoss ?? run.evalLoss;
    } else if (event.type === "result") run.adapterDir = event.result.adapterDir;
    else if (event.type === "error") run.error = event.message;
  }
  for (const other of outputs.slice(1)) assert.equal(other, "", "only rank 0 reports");
  return run;
}

// batch 1 × 3 accumulated over 2 ranks: rank 0 runs two micro-batches a step, rank 1 one and an
// empty one; the epoch's last step (22 = 7 × 3 + 1) leaves rank 1 only the empty one.
const hyperparameters: TrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
  maxSteps: 9,
  batchSize: 1,
  gradientAccumulationSteps: 3,
  learningRate: 5e-3,
  warmupSteps: 2,
  lrSchedulerType: "cosine",
  evalSteps: 9,
  seed: 5,
  maxLength: 40,
};

describe("FSDP (torch backend)", () => {
  it("two processes with the base sharded train as one process with the same global batch", {
    skip: "skip" in found && found.skip,
  }, async () => {
    const { python } = found as { python: string };
    const single = await runTorch(python, hyperparameters, 1, false);
    const sharded = await runTorch(python, hyperparameters, 2, true);
    assert.equal(sharded.error, null);
    assert.equal(sharded.losses.length, 9);
    assert.ok(
      Math.abs(single.losses[0] - sharded.losses[0]) < 1e-5,
      `first-step loss: one process ${single.losses[0]}, FSDP ${sharded.losses[0]}`,
    );
    for (let i = 1; i < 9; i++)
      assert.ok(Math.abs(single.losses[i] - sharded.losses[i]) / single.losses[i] < 1e-4, `step ${i + 1}`);
    assert.ok(Math.abs(single.evalLoss! - sharded.evalLoss!) / single.evalLoss! < 1e-4);
    // The adapter rank 0 wrote is the engine's format and the single process's values.
    const a = loadAdapter(single.adapterDir!);
    const b = loadAdapter(sharded.adapterDir!);
    assert.deepEqual([...b.tensors.keys()].sort(), [...a.tensors.keys()].sort());
    let worst = 0;
    for (const [name, values] of a.tensors) {
      const other = b.tensors.get(name)!;
      for (let i = 0; i < values.length; i++) worst = Math.max(worst, Math.abs(values[i] - other[i]));
    }
    assert.ok(worst < 1e-4, `largest adapter difference ${worst}`);
  });

  it("combines with gradient checkpointing and packing", {
    skip: "skip" in found && found.skip,
  }, async () => {
    const { python } = found as { python: string };
    const h = {
      ...hyperparameters,
      maxSteps: 3,
      evalSteps: 3,
      batchSize: 2,
      gradientAccumulationSteps: 2,
      maxLength: 80,
    };
    const single = await runTorch(python, h, 1, false);
    const sharded = await runTorch(python, h, 2, true, { gradientCheckpointing: true, packing: true });
    assert.equal(sharded.error, null);
    for (let i = 0; i < 3; i++)
      assert.ok(Math.abs(single.losses[i] - sharded.losses[i]) / single.losses[i] < 1e-4, `step ${i + 1}`);
  });

  describe("through svc server and svc worker --backend torch --gpus 2 --fsdp (gloo, CPU)", {
    skip: "skip" in found && found.skip,
  }, () => {
    let database: Awaited<ReturnType<typeof createPgDatabase>>;
    let dataDir: string;
    let server: ServerProcess;
    let id: Identity;
    let worker: Awaited<ReturnType<typeof spawnReady>> | undefined;
    before(async () => {
      database = await createPgDatabase();
      dataDir = tempDir("torch-fsdp");
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

    it("trains a job on two sharded processes with the engine's events", async () => {
      const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
      const created = await createJob(
        server.apiUrl,
        id,
        dataset.id,
        { maxSteps: 3, saveSteps: 3 },
        {
          backend: "torch",
          evalFraction: 0.25,
        },
      );
      worker = await spawnReady("worker", [
        ...["--database-url", database.url, "--data-dir", dataDir, "--bundled-models", "none"],
        ...[
          "--model",
          `${TINY_MODEL}=${await tinyModel()}`,
          "--job-poll-ms",
          "100",
          "--job-lease-ms",
          "3000",
        ],
        ...["--backend", "torch", "--device", "cpu", "--gpus", "2", "--fsdp"],
        ...["--python", (found as { python: string }).python],
      ]);
      const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 180_000);
      const events = frames.map((f) => f.event);
      assert.equal(events.at(-2), "training.completed", frames.map((f) => f.data).join("\n"));
      const logs = frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
      assert.deepEqual(
        logs.map((l) => [l.step, l.device]),
        [
          [1, "cpu x2"],
          [2, "cpu x2"],
          [3, "cpu x2"],
        ],
      );
      assert.ok(logs.every((l) => l.loss > 0) && logs.at(-1).evalLoss > 0, JSON.stringify(logs));
      assert.deepEqual(
        frames.filter((f) => f.event === "checkpoint.saved").map((f) => JSON.parse(f.data).step),
        [3],
      );
    });
  });

  it("a PyTorch without fully_shard refuses an FSDP job by name", {
    skip: !debianTorch && "/usr/bin/python3 has no torch 1.x",
  }, async () => {
    const run = await runTorch("/usr/bin/python3", hyperparameters, 1, true);
    assert.match(
      run.error ?? "",
      /^FSDP needs PyTorch 2\.7 or later \(fully_shard with ignored_params\); this Python has torch 1\./,
    );
    assert.equal(run.adapterDir, null);
  });
});
