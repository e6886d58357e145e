// The torch backend through `svc server` and `svc worker --backend torch`
// (Debian's python3-torch on the CPU): a torch job waits with a visible reason
// until a torch worker runs; it trains with the engine's events (plus the
// backend, device and memory), checkpoints and a final PEFT adapter that the
// engine serves through the edge to the official openai client; a cancel
// checkpoints and stops; and after the worker is killed with SIGKILL another
// one resumes the job from its last checkpoint.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import {
  call,
  chatJsonl,
  createJob,
  createPgDatabase,
  edgeClient,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  spawnReady,
  startServerProcess,
  TINY_MODEL,
  tempDir,
  tinyModel,
  until,
  uploadDataset,
  waitForExit,
} from "./harness.js";

const PYTHON = process.env.SVC_PYTHON ?? "/usr/bin/python3";
const hasTorch = spawnSync(PYTHON, ["-c", "import torch"]).status === 0;

describe("the torch backend through svc server and svc worker --backend torch", {
  skip: !hasTorch && `${PYTHON} has no torch`,
}, () => {
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let dataDir: string;
  let server: ServerProcess;
  let id: Identity;
  const workers: Awaited<ReturnType<typeof spawnReady>>[] = [];

  const startWorker = async (extra: string[] = []) => {
    const worker = await spawnReady("worker", [
      ...extra,
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
    workers.push(worker);
    return worker;
  };
  const job = async (jobId: string) =>
    (await call(server.apiUrl, "GET", `/v1/jobs/${jobId}`, { token: id.token })).body.job;

  before(async () => {
    database = await createPgDatabase();
    dataDir = tempDir("torch");
    // No in-process engine runner: torch jobs wait for the torch worker.
    server = await startServerProcess({
      dataDir,
      databaseUrl: database.url,
      args: ["--workers", "0", "--job-lease-ms", "3000", "--job-poll-ms", "100"],
    });
    id = await newIdentity(server.apiUrl);
  });
  after(async () => {
    for (const w of workers) {
      if (w.proc.exitCode === null) w.proc.kill("SIGKILL");
      await waitForExit(w.proc);
    }
    await server?.stop();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps a torch job queued with a reason until a torch worker trains it like the engine, and the edge serves its adapter", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    const created = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 4, saveSteps: 2 },
      { backend: "torch", evalFraction: 0.25 },
    );
    const queued = await job(created.id);
    assert.equal(queued.status, "queued");
    assert.equal(queued.backend, "torch");
    assert.match(queued.queuedReason, /no worker offers the torch backend.*svc worker --backend torch/);

    await startWorker();
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 120_000);
    const events = frames.map((f) => f.event);
    assert.equal(events[0], "training.started", frames.map((f) => f.data).join("\n"));
    assert.equal(events.at(-2), "training.completed", frames.map((f) => f.data).join("\n"));
    const started = JSON.parse(frames[0].data);
    assert.equal(started.totalSteps, 4);
    const logs = frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
    assert.deepEqual(
      logs.map((l) => l.step),
      [1, 2, 3, 4],
    );
    for (const log of logs) {
      assert.ok(Number.isFinite(log.loss) && log.loss > 0, JSON.stringify(log));
      assert.ok(log.learningRate > 0 && log.tokensPerSecond > 0, JSON.stringify(log));
      assert.equal(log.backend, "torch");
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
    const saved = frames.filter((f) => f.event === "checkpoint.saved").map((f) => JSON.parse(f.data).step);
    assert.deepEqual(saved, [2, 4]);
    assert.equal((await job(created.id)).queuedReason, null);

    const file = async (name: string) => {
      const reply = await fetch(`${server.apiUrl}/v1/jobs/${created.id}/artifacts/final/${name}`, {
        headers: { authorization: `Bearer ${id.token}` },
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
    const deployment = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug, target: { kind: "adapter", adapter: { kind: "final", jobId: created.id } } },
    });
    assert.equal(deployment.status, 201, JSON.stringify(deployment.body));
    const key = await call(server.apiUrl, "POST", `/v1/endpoints/${deployment.body.deployment.id}/keys`, {
      token: id.token,
      json: { label: "torch" },
    });
    const completion = await edgeClient(server.edgeUrl, slug, key.body.key.plaintext).chat.completions.create(
      {
        model: "x",
        messages: [{ role: "user", content: "What is 4 plus one?" }],
        max_tokens: 3,
      },
    );
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.choices[0].message.role, "assistant");
    assert.ok(completion.usage!.completion_tokens > 0);
  });

  it("cancels a running torch job: it checkpoints its last full step and stops", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    const created = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 100000, saveSteps: 100000 },
      { backend: "torch" },
    );
    await readSse(await openEvents(server.apiUrl, id.token, created.id), {
      stopWhen: (f) => f.event === "training.log",
      timeoutMs: 60_000,
    });
    const cancel = await call(server.apiUrl, "POST", `/v1/jobs/${created.id}/cancel`, { token: id.token });
    assert.equal(cancel.status, 200);
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 60_000);
    assert.equal(frames.at(-2)?.event, "training.cancelled", frames.map((f) => f.data).join("\n"));
    const after = await job(created.id);
    assert.equal(after.status, "cancelled");
    const artifacts = (
      await call(server.apiUrl, "GET", `/v1/jobs/${created.id}/artifacts`, { token: id.token })
    ).body.artifacts as { kind: string; step: number }[];
    const checkpoint = artifacts.find((a) => a.kind === "checkpoint");
    assert.ok(checkpoint && checkpoint.step >= 1, JSON.stringify(artifacts));
  });

  it("resumes a torch job from its last checkpoint after its worker is killed with SIGKILL", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    const created = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 400, saveSteps: 3 },
      { backend: "torch" },
    );
    await readSse(await openEvents(server.apiUrl, id.token, created.id), {
      stopWhen: (f) => f.event === "checkpoint.saved",
      timeoutMs: 60_000,
    });
    for (const w of workers) {
      w.proc.kill("SIGKILL");
      await waitForExit(w.proc);
    }
    // Its Python process goes with it (its stdin closes), leaving the job's lease to lapse.
    await startWorker();
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 240_000);
    assert.equal(
      frames.at(-2)?.event,
      "training.completed",
      frames
        .map((f) => f.data)
        .join("\n")
        .slice(-2000),
    );
    const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
    assert.equal(starts.length, 2);
    assert.ok(
      starts[1].resumedFromStep >= 3 && starts[1].resumedFromStep % 3 === 0,
      JSON.stringify(starts[1]),
    );
    assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, 400);
    await until("the job to be completed", async () => (await job(created.id)).status === "completed");
  });

  it("restarts a job from its last checkpoint when its Python process is killed with SIGKILL", async () => {
    const worker = workers.find((w) => w.proc.exitCode === null && w.proc.signalCode === null)!;
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    const created = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 300, saveSteps: 3 },
      { backend: "torch" },
    );
    await readSse(await openEvents(server.apiUrl, id.token, created.id), {
      stopWhen: (f) => f.event === "checkpoint.saved",
      timeoutMs: 60_000,
    });
    // The worker's training process (Node) runs Python as its child: kill that one alone.
    const children = (pid: number) =>
      spawnSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
        .stdout.split("\n")
        .map(Number)
        .filter((n) => n > 0);
    const python = children(worker.proc.pid!).flatMap(children);
    assert.equal(python.length, 1, "one Python process under the worker's training process");
    process.kill(python[0], "SIGKILL");
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 240_000);
    assert.equal(
      frames.at(-2)?.event,
      "training.completed",
      frames
        .map((f) => f.data)
        .join("\n")
        .slice(-2000),
    );
    const starts = frames.filter((f) => f.event === "training.started").map((f) => JSON.parse(f.data));
    assert.equal(starts.length, 2);
    assert.ok(
      starts[1].resumedFromStep >= 3 && starts[1].resumedFromStep % 3 === 0,
      JSON.stringify(starts[1]),
    );
    assert.match(worker.output(), /the torch training process exited with signal SIGKILL/);
  });

  it("refuses torch flags it cannot use, before claiming anything (exit 2, the flag named)", async () => {
    const base = ["--database-url", database.url, "--data-dir", dataDir, "--backend", "torch"];
    await assert.rejects(
      spawnReady("worker", [...base, "--device", "tpu"]),
      /--device must be cpu or cuda \(got "tpu"\)/,
    );
    await assert.rejects(
      spawnReady("worker", [...base, "--gpus", "0"]),
      /--gpus must be an integer from 1 to 1024/,
    );
    await assert.rejects(
      spawnReady("worker", ["--database-url", database.url, "--gpus", "2"]),
      /--gpus applies to --backend torch only/,
    );
    await assert.rejects(
      spawnReady("worker", [...base, "--python", "/nonexistent/python3"]),
      /no Python with PyTorch \(\/nonexistent\/python3: /,
    );
  });

  it("trains a job on two data-parallel processes with --gpus 2 --device cpu (gloo)", async () => {
    for (const w of workers) {
      if (w.proc.exitCode !== null) continue;
      w.proc.kill("SIGTERM");
      await waitForExit(w.proc);
    }
    await startWorker(["--gpus", "2", "--device", "cpu"]);
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(12));
    const created = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 3, saveSteps: 3 },
      { backend: "torch" },
    );
    const frames = await eventsUntilEnd(server.apiUrl, id.token, created.id, 120_000);
    assert.equal(frames.at(-2)?.event, "training.completed", frames.map((f) => f.data).join("\n"));
    const logs = frames.filter((f) => f.event === "training.log").map((f) => JSON.parse(f.data));
    assert.deepEqual(
      logs.map((l) => [l.step, l.device]),
      [
        [1, "cpu x2"],
        [2, "cpu x2"],
        [3, "cpu x2"],
      ],
    );
    assert.deepEqual(
      frames.filter((f) => f.event === "checkpoint.saved").map((f) => JSON.parse(f.data).step),
      [3],
    );
  });
});
