// The torch backend through `svc server` and `svc worker --backend torch`
// (Debian's python3-torch on the CPU): a torch job waits with a visible reason
// until a torch worker runs; it trains with the engine's events (plus the
// backend, device and memory), checkpoints and a final PEFT adapter that the
// engine serves through the edge to the official openai client; a cancel
// checkpoints and stops; and after the worker is killed with SIGKILL another
// one resumes the job from its last checkpoint.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { needs } from "@svc/engine/testing";
import { call, edgeClient, spawnReady, until, waitForExit } from "./harness.js";
import {
  checkpointSteps,
  completedTorchLogs,
  framesText,
  hasTorch,
  TORCH_PYTHON,
  torchCluster,
  trainingLogs,
} from "./torch-harness.js";

const PYTHON = TORCH_PYTHON;

describe("the torch backend through svc server and svc worker --backend torch", {
  skip: !hasTorch && needs("torch", `${PYTHON} has no torch`),
}, () => {
  const cluster = torchCluster("torch");
  const startWorker = (extra: string[] = []) => cluster.startWorker(PYTHON, extra);
  const job = async (jobId: string) =>
    (await call(cluster.server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: cluster.id.token })).body.job;

  /** The job's events to its completion, in two starts: the second from a checkpoint (every 3 steps). */
  const resumedToTheEnd = async (jobId: string) => {
    const frames = await cluster.eventsUntilEnd(jobId, 240_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames).slice(-2000));
    const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
    assert.equal(starts.length, 2);
    assert.ok(
      starts[1].resumedFromStep >= 3 && starts[1].resumedFromStep % 3 === 0,
      JSON.stringify(starts[1]),
    );
    return frames;
  };

  it("keeps a torch job queued with a reason until a torch worker trains it like the engine, and the edge serves its adapter", async () => {
    const created = await cluster.createTorchJob({ maxSteps: 4, saveSteps: 2 }, { evalFraction: 0.25 });
    const queued = await job(created.id);
    assert.equal(queued.status, "queued");
    assert.equal(queued.backend, "torch");
    assert.match(queued.queuedReason, /no worker offers the torch backend.*svc worker --backend torch/);

    await startWorker();
    const frames = await cluster.eventsUntilEnd(created.id, 120_000);
    const logs = completedTorchLogs(frames, 4);
    assert.equal(JSON.parse(frames[0].data).totalSteps, 4);
    for (const log of logs) {
      assert.ok(log.learningRate > 0 && log.tokensPerSecond > 0, JSON.stringify(log));
      assert.equal(log.device, "cpu");
      assert.ok(log.memoryBytes > 0, JSON.stringify(log));
      assert.ok(!("exactMatchIds" in log), "the worker turns the answers into evalExactMatch");
    }
    // The eval at the last step: loss, token accuracy and exact match (the answers are short).
    const last = logs.at(-1);
    assert.ok(
      last.evalLoss > 0 && last.evalTokenAccuracy >= 0 && last.evalTokenAccuracy <= 1,
      JSON.stringify(last),
    );
    assert.ok(last.evalExactMatch >= 0 && last.evalExactMatch <= 1, JSON.stringify(last));
    const saved = checkpointSteps(frames);
    assert.deepEqual(saved, [2, 4]);
    assert.equal((await job(created.id)).queuedReason, null);

    const file = async (name: string) => {
      const reply = await fetch(`${cluster.server.apiUrl}/v1/jobs/${created.id}/artifacts/final/${name}`, {
        headers: { authorization: `Bearer ${cluster.id.token}` },
      });
      assert.equal(reply.status, 200, name);
      return reply;
    };
    const config = (await (await file("adapter_config.json")).json()) as Record<string, unknown>;
    assert.equal(config.peft_type, "LORA");
    assert.equal(config.r, 4);
    assert.equal(config.lora_alpha, 8);
    assert.ok((await (await file("adapter_model.safetensors")).arrayBuffer()).byteLength > 0);

    const slug = `torch-${process.pid}`;
    const deployment = await call(cluster.server.apiUrl, "POST", `/v1/endpoints?${cluster.id.scope}`, {
      token: cluster.id.token,
      json: { slug, target: { kind: "adapter", adapter: { kind: "final", jobId: created.id } } },
    });
    assert.equal(deployment.status, 201, JSON.stringify(deployment.body));
    const key = await call(
      cluster.server.apiUrl,
      "POST",
      `/v1/endpoints/${deployment.body.deployment.id}/keys`,
      {
        token: cluster.id.token,
        json: { label: "torch" },
      },
    );
    const completion = await edgeClient(
      cluster.server.edgeUrl,
      slug,
      key.body.key.plaintext,
    ).chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "What is 4 plus one?" }],
      max_tokens: 3,
    });
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.choices[0].message.role, "assistant");
    assert.ok(completion.usage!.completion_tokens > 0);
  });

  it("cancels a running torch job: it checkpoints its last full step and stops", async () => {
    const created = await cluster.createTorchJob({ maxSteps: 100000, saveSteps: 100000 });
    await cluster.waitForEvent(created.id, "training.log");
    const cancel = await call(cluster.server.apiUrl, "POST", `/v1/jobs/${created.id}/cancel`, {
      token: cluster.id.token,
    });
    assert.equal(cancel.status, 200);
    const frames = await cluster.eventsUntilEnd(created.id, 60_000);
    assert.equal(frames.at(-2)?.event, "training.cancelled", framesText(frames));
    const after = await job(created.id);
    assert.equal(after.status, "cancelled");
    const artifacts = (
      await call(cluster.server.apiUrl, "GET", `/v1/jobs/${created.id}/artifacts`, {
        token: cluster.id.token,
      })
    ).body.artifacts as { kind: string; step: number }[];
    const checkpoint = artifacts.find((a) => a.kind === "checkpoint");
    assert.ok(checkpoint && checkpoint.step >= 1, JSON.stringify(artifacts));
  });

  it("resumes a torch job from its last checkpoint after its worker is killed with SIGKILL", async () => {
    const created = await cluster.createTorchJob({ maxSteps: 400, saveSteps: 3 });
    await cluster.waitForEvent(created.id, "checkpoint.saved");
    for (const w of cluster.workers) {
      w.proc.kill("SIGKILL");
      await waitForExit(w.proc);
    }
    // Its Python process goes with it (its stdin closes), leaving the job's lease to lapse.
    await startWorker();
    const frames = await resumedToTheEnd(created.id);
    assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, 400);
    await until("the job to be completed", async () => (await job(created.id)).status === "completed");
  });

  it("restarts a job from its last checkpoint when its Python process is killed with SIGKILL", async () => {
    const worker = cluster.workers.find((w) => w.proc.exitCode === null && w.proc.signalCode === null)!;
    const created = await cluster.createTorchJob({ maxSteps: 300, saveSteps: 3 });
    await cluster.waitForEvent(created.id, "checkpoint.saved");
    // The worker's training process (Node) runs Python as its child: kill that one alone.
    const children = (pid: number) =>
      spawnSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
        .stdout.split("\n")
        .map(Number)
        .filter((n) => n > 0);
    const python = children(worker.proc.pid!).flatMap(children);
    assert.equal(python.length, 1, "one Python process under the worker's training process");
    process.kill(python[0], "SIGKILL");
    await resumedToTheEnd(created.id);
    assert.match(worker.output(), /the torch training process exited with signal SIGKILL/);
  });

  it("refuses torch flags it cannot use, before claiming anything (exit 2, the flag named)", async () => {
    const base = [
      "--database-url",
      cluster.database.url,
      "--data-dir",
      cluster.dataDir,
      "--backend",
      "torch",
    ];
    await assert.rejects(
      spawnReady("worker", [...base, "--device", "tpu"]),
      /--device must be cpu or cuda \(got "tpu"\)/,
    );
    await assert.rejects(
      spawnReady("worker", [...base, "--gpus", "0"]),
      /--gpus must be an integer from 1 to 1024/,
    );
    await assert.rejects(
      spawnReady("worker", ["--database-url", cluster.database.url, "--gpus", "2"]),
      /--gpus applies to --backend torch only/,
    );
    await assert.rejects(
      spawnReady("worker", [...base, "--python", "/nonexistent/python3"]),
      /no Python with PyTorch \(\/nonexistent\/python3: /,
    );
  });

  it("trains a job on two data-parallel processes with --gpus 2 --device cpu (gloo)", async () => {
    for (const w of cluster.workers) {
      if (w.proc.exitCode !== null) continue;
      w.proc.kill("SIGTERM");
      await waitForExit(w.proc);
    }
    await startWorker(["--gpus", "2", "--device", "cpu"]);
    const created = await cluster.createTorchJob({ maxSteps: 3, saveSteps: 3 });
    const frames = await cluster.eventsUntilEnd(created.id, 120_000);
    assert.equal(frames.at(-2)?.event, "training.completed", framesText(frames));
    const logs = trainingLogs(frames);
    assert.deepEqual(
      logs.map((l) => [l.step, l.device]),
      [
        [1, "cpu x2"],
        [2, "cpu x2"],
        [3, "cpu x2"],
      ],
    );
    assert.deepEqual(checkpointSteps(frames), [3]);
  });
});
