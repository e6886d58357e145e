// The SDK in this process against a real `svc server`: trainer callbacks and
// their order, a throwing callback, abortSignal versus cancel(), infer on the
// final adapter, a checkpoint and the base model, and CloudApiClient errors.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { ToolCall } from "@svc/wire";
import {
  CloudApiClient,
  CloudApiError,
  createTrainer,
  infer,
  openScopedSession,
  streamJobEvents,
  TrainingCancelledError,
} from "../../src/index.js";
import {
  cliEnv,
  LOOKUP_ORDER_TOOL,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

let server: TestServer;
const model = TEST_MODEL as "svc/pico-llama";
const rows = Array.from({ length: 16 }, (_, i) => ({
  messages: [
    { role: "user" as const, content: `ping ${i}` },
    { role: "assistant" as const, content: `pong ${i}` },
  ],
}));
const dataset = { type: "inline" as const, rows };

before(async () => {
  const home = await tempDir("sdk-home");
  server = await startTestModelServer(home);
  Object.assign(process.env, cliEnv(home, server.apiUrl, { SVC_PROJECT_DIR: await tempDir("sdk-project") }));
});

after(async () => {
  await server?.stop();
});

let completedJobId: string;

test("callbacks run in order, onCheckpoint's infer talks to that checkpoint, wait() settles with the artifacts", async () => {
  const seen: string[] = [];
  const metrics: Record<string, number | null>[] = [];
  let checkpointAnswer: string | null = null;
  const trainer = createTrainer({
    name: "sdk-order",
    model,
    dataset,
    evalDataset: { type: "inline", rows: rows.slice(0, 4) },
    maxSteps: 4,
    batchSize: 2,
    evalSteps: 2,
    saveSteps: 2,
    seed: 7,
    exactMatchSamples: 3,
    callbacks: {
      onStarted: async ({ job }) => {
        seen.push(`started:${job.status}`);
      },
      onLog: async ({ step, loss, evalLoss, evalTokenAccuracy, evalExactMatch }) => {
        // A slow callback: later events wait for it.
        await new Promise((r) => setTimeout(r, 20));
        seen.push(`log:${step}:${loss === null ? "-" : "loss"}${evalLoss === null ? "" : "+eval"}`);
        metrics.push({ evalLoss, evalTokenAccuracy, evalExactMatch });
      },
      onCheckpoint: async ({ step, infer: chat }) => {
        if (checkpointAnswer === null) {
          checkpointAnswer = (
            await chat({ messages: [{ role: "user", content: "ping 1" }], maxTokens: 4, seed: 1 })
          ).text;
        }
        seen.push(`checkpoint:${step}`);
      },
      onCompleted: async ({ job, artifacts }) => {
        seen.push(`completed:${job.status}:${artifacts.map((a) => a.name).join(",")}`);
      },
    },
  });
  const { jobId } = await trainer.start();
  assert.equal(trainer.jobId, jobId);
  const result = await trainer.wait();
  completedJobId = jobId;
  assert.equal(result.job.status, "completed");
  assert.equal(seen[0], "started:running");
  assert.equal(seen.at(-1), "completed:completed:checkpoint-2,checkpoint-4,final,tensorboard");
  assert.ok(seen.includes("checkpoint:2") && seen.includes("checkpoint:4"), seen.join(" "));
  const steps = seen.filter((s) => s.startsWith("log:")).map((s) => Number(s.split(":")[1]));
  assert.deepEqual(
    steps,
    [...steps].sort((a, b) => a - b),
    "logs arrive in step order",
  );
  assert.ok(
    seen.some((s) => s.includes("+eval")),
    "eval losses reach onLog",
  );
  // The task metrics come with every eval ("pong 3" is a short answer: exact match runs), fractions.
  for (const m of metrics) {
    for (const value of [m.evalTokenAccuracy, m.evalExactMatch]) {
      if (m.evalLoss === null) assert.equal(value, null);
      else assert.ok(typeof value === "number" && value >= 0 && value <= 1, JSON.stringify(m));
    }
  }
  assert.equal(result.job.hyperparameters.exactMatchSamples, 3, "the SDK passes exactMatchSamples on");
  assert.equal(typeof checkpointAnswer, "string");
  assert.deepEqual(result.artifacts.map((a) => a.name).sort(), [
    "checkpoint-2",
    "checkpoint-4",
    "final",
    "tensorboard",
  ]);
});

test("datasets by URL (with a bearer token) and from a file are uploaded at start()", async () => {
  const jsonl = `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
  const seenAuth: (string | undefined)[] = [];
  const files = createServer((req, res) => {
    seenAuth.push(req.headers.authorization);
    if (req.headers.authorization !== "Bearer data-token") return void res.writeHead(401).end();
    res.writeHead(200, { "content-type": "application/x-ndjson" }).end(jsonl);
  });
  await new Promise<void>((r) => files.listen(0, "127.0.0.1", r));
  try {
    await writeFile(join(process.env.SVC_PROJECT_DIR!, "eval.jsonl"), jsonl);
    const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/train.jsonl`;
    const trainer = createTrainer({
      name: "sdk-url",
      model,
      dataset: { type: "url", url, token: "data-token" },
      evalDataset: { type: "file", path: "eval.jsonl" },
      maxSteps: 1,
      batchSize: 2,
    });
    const { job } = await trainer.wait();
    assert.equal(job.status, "completed");
    assert.deepEqual(seenAuth, ["Bearer data-token"]);
    const { scoped } = await openScopedSession();
    assert.equal((await scoped.getDataset(job.datasetId)).rows, 16);
    assert.equal((await scoped.getDataset(job.evalDatasetId!)).name, "eval.jsonl");
    const missing = createTrainer({
      name: "sdk-missing",
      model,
      dataset: { type: "file", path: "nope.jsonl" },
    });
    await assert.rejects(missing.start(), /dataset file nope\.jsonl: not found/);
  } finally {
    files.close();
  }
});

test("start() checks lora.targetModules against the model the server describes, before uploading anything", async () => {
  const { scoped } = await openScopedSession();
  const [info] = (await scoped.listModels()).filter((m) => m.name === TEST_MODEL);
  assert.equal(info.family, "llama");
  assert.deepEqual(info.loraTargets, [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
  ]);
  const before = (await scoped.listDatasets()).length;
  const trainer = createTrainer({
    name: "sdk-targets",
    model,
    dataset,
    lora: { r: 4, alpha: 8, targetModules: ["qkv_proj"] },
    maxSteps: 1,
  });
  await assert.rejects(
    trainer.start(),
    /createTrainer: lora\.targetModules\[0\]: "qkv_proj" is not a LoRA target of test\/tiny-random \(LlamaForCausalLM\); valid: "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", or "all-linear" alone/,
  );
  assert.equal(trainer.jobId, null);
  assert.equal((await scoped.listDatasets()).length, before);
});

test("a callback that throws makes wait() reject with that error", async () => {
  const boom = new Error("callback says no");
  const trainer = createTrainer({
    name: "sdk-throw",
    model,
    dataset,
    maxSteps: 2,
    batchSize: 2,
    callbacks: {
      onLog: () => {
        throw boom;
      },
    },
  });
  await assert.rejects(trainer.wait(), (e) => e === boom);
});

test("abortSignal stops only the local wait(); cancel() stops the job", async () => {
  const ac = new AbortController();
  const trainer = createTrainer({
    name: "sdk-long",
    model,
    dataset,
    maxSteps: 400,
    batchSize: 2,
    abortSignal: ac.signal,
    callbacks: { onLog: () => ac.abort(new Error("stop watching")) },
  });
  await assert.rejects(trainer.wait(), /stop watching/);
  const { scoped } = await openScopedSession();
  const job = await scoped.getJob(trainer.jobId!);
  assert.ok(job.status === "running" || job.status === "queued", `the job goes on (${job.status})`);

  // Follow the still-running job from the outside while cancel() stops it.
  const follow = (async () => {
    const types: string[] = [];
    for await (const { event } of streamJobEvents({ client: scoped, jobId: job.id })) types.push(event.type);
    return types;
  })();
  await trainer.cancel();
  const types = await follow;
  assert.equal(types.at(-1), "training.cancelled");
  assert.equal((await scoped.getJob(job.id)).status, "cancelled");
});

test("wait() on a cancelled job rejects with TrainingCancelledError", async () => {
  const trainer = createTrainer({
    name: "sdk-cancel",
    model,
    dataset,
    maxSteps: 400,
    batchSize: 2,
    callbacks: {
      onStarted: async () => {
        await trainer.cancel();
      },
    },
  });
  await assert.rejects(
    trainer.wait(),
    (e) => e instanceof TrainingCancelledError && e.job.status === "cancelled",
  );
});

test("infer: final adapter, streaming deltas, base model, and a clear error for a bad target", async () => {
  const final = await infer({
    adapter: { kind: "final", jobId: completedJobId },
    messages: [{ role: "user", content: "ping 3" }],
    maxTokens: 6,
    temperature: 0,
  });
  assert.equal(final.completion.object, "chat.completion");
  assert.equal(final.text, final.completion.choices[0].message.content);
  const deltas: string[] = [];
  for await (const d of infer({
    adapter: { kind: "final", jobId: completedJobId },
    messages: [{ role: "user", content: "ping 3" }],
    maxTokens: 6,
    temperature: 0,
    stream: true,
  })) {
    deltas.push(d);
  }
  assert.equal(deltas.join(""), final.text, "greedy streaming matches the non-streaming answer");
  const base = await infer({
    baseModel: TEST_MODEL,
    messages: [{ role: "user", content: "hi" }],
    maxTokens: 3,
    seed: 3,
  });
  assert.equal(typeof base.text, "string");
  assert.throws(
    () => infer({ baseModel: TEST_MODEL, adapter: { kind: "final", jobId: completedJobId }, messages: [] }),
    /messages: expected a non-empty array/,
  );
  assert.throws(() => infer({ messages: [{ role: "user", content: "x" }] }), /exactly one of adapter/);
  await assert.rejects(
    infer({
      adapter: { kind: "checkpoint", jobId: completedJobId, step: 3 },
      messages: [{ role: "user", content: "x" }],
    }),
    (e) =>
      e instanceof CloudApiError &&
      e.status >= 400 &&
      e.status < 500 &&
      /no checkpoint at step 3/.test(e.message),
  );
});

test("infer: tools, toolChoice and responseFormat; the calls come back as toolCalls", async () => {
  const tools = [LOOKUP_ORDER_TOOL];
  const called = await infer({
    baseModel: TEST_MODEL,
    messages: [{ role: "user", content: "Where is #A1?" }],
    tools,
    toolChoice: { type: "function", function: { name: "lookup_order" } },
    maxTokens: 200,
  });
  assert.equal(called.finishReason, "tool_calls");
  assert.equal(called.toolCalls.length, 1);
  assert.equal(called.toolCalls[0].function.name, "lookup_order");
  assert.ok(["A1", "B2"].includes(JSON.parse(called.toolCalls[0].function.arguments).order_id));
  // Streamed: the text comes from the stream, each call whole through onToolCall.
  const streamedCalls: ToolCall[] = [];
  const streamedText: string[] = [];
  for await (const d of infer({
    baseModel: TEST_MODEL,
    messages: [{ role: "user", content: "Where is #A1?" }],
    tools,
    toolChoice: { type: "function", function: { name: "lookup_order" } },
    maxTokens: 200,
    stream: true,
    onToolCall: (call) => streamedCalls.push(call),
  })) {
    streamedText.push(d);
  }
  assert.equal(streamedText.join(""), "");
  assert.equal(streamedCalls.length, 1);
  assert.equal(streamedCalls[0].function.name, "lookup_order");
  assert.match(streamedCalls[0].id, /^call_/);
  assert.ok(["A1", "B2"].includes(JSON.parse(streamedCalls[0].function.arguments).order_id));
  assert.throws(
    () =>
      infer({
        baseModel: TEST_MODEL,
        messages: [{ role: "user", content: "x" }],
        tools,
        stream: true,
      }),
    /stream: true with tools needs onToolCall/,
  );
  // The call and its result go back as history.
  const answered = await infer({
    baseModel: TEST_MODEL,
    messages: [
      { role: "user", content: "Where is #A1?" },
      { role: "assistant", content: null, tool_calls: called.toolCalls },
      { role: "tool", tool_call_id: called.toolCalls[0].id, content: '{"status": "shipped"}' },
    ],
    tools,
    toolChoice: "none",
    maxTokens: 4,
  });
  assert.deepEqual(answered.toolCalls, []);
  const json = await infer({
    baseModel: TEST_MODEL,
    messages: [{ role: "user", content: "hi" }],
    responseFormat: { type: "json_schema", json_schema: { name: "r", schema: tools[0].function.parameters } },
    maxTokens: 200,
  });
  assert.ok(["A1", "B2"].includes(JSON.parse(json.text).order_id));
});

test("CloudApiClient: errors carry the upstream status, code and message", async () => {
  const { scoped, client } = await openScopedSession();
  assert.ok((await client.listModels()).some((m) => m.name === TEST_MODEL));
  const datasets = await scoped.listDatasets();
  assert.ok(datasets.some((d) => d.name === "sdk-order-train" && d.rows === 16));
  assert.equal((await scoped.getDataset(datasets[0].id)).id, datasets[0].id);
  const final = await scoped.getArtifact(completedJobId, "final");
  assert.equal(final.kind, "final");
  assert.ok(final.files.some((f) => f.path === "adapter_config.json"));
  const config = JSON.parse(
    new TextDecoder().decode(
      await scoped.downloadArtifactFile(completedJobId, "final", "adapter_config.json"),
    ),
  );
  assert.equal(config.peft_type, "LORA");
  await assert.rejects(scoped.uploadDataset('{"messages": []}\nnot json\n', { name: "bad.jsonl" }), (e) => {
    return e instanceof CloudApiError && e.status === 400 && /line 1|line 2/.test(e.message);
  });
  await assert.rejects(
    scoped.getJob("00000000-0000-0000-0000-000000000000"),
    (e) => e instanceof CloudApiError && e.status === 404,
  );
  const target = { kind: "base_model" as const, baseModel: TEST_MODEL };
  await assert.rejects(
    scoped.createDeployment({ slug: "admin", target }),
    (e) => e instanceof CloudApiError && e.status === 400,
  );
  const d = await scoped.createDeployment({ slug: "sdk-dep", target });
  await assert.rejects(
    scoped.createDeployment({ slug: "sdk-dep", target }),
    (e) => e instanceof CloudApiError && e.status === 409,
  );
  const moved = await scoped.updateDeployment(d.id, {
    target: { kind: "adapter", adapter: { kind: "final", jobId: completedJobId } },
  });
  assert.deepEqual(moved.target, { kind: "adapter", adapter: { kind: "final", jobId: completedJobId } });
  const key = await scoped.issueDeploymentKey(d.id, { label: "sdk" });
  assert.equal((await scoped.listDeploymentKeys(d.id))[0].lastUsedAt, null);
  // One edge request: its usage reaches the key's totals and per-day rows (written about once a second).
  const served = await fetch(`${server.edgeUrl}/d/${d.slug}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.plaintext}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 1 }),
  });
  assert.equal(served.status, 200);
  const { usage } = (await served.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  const deadline = Date.now() + 30_000;
  let perDay = await scoped.getDeploymentKeyUsage(d.id, key.id, { days: 2 });
  while (perDay.totals.requests === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    perDay = await scoped.getDeploymentKeyUsage(d.id, key.id, { days: 2 });
  }
  const totals = {
    requests: 1,
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
  };
  assert.deepEqual(perDay.totals, totals);
  assert.deepEqual(
    perDay.daily.map((r) => r.day),
    [perDay.from, perDay.to],
  );
  assert.deepEqual((await scoped.listDeploymentKeys(d.id))[0].usage, { days: 30, ...totals });
  assert.equal((await scoped.getDeploymentKeyUsage(d.id, key.id)).daily.length, 30);
  await assert.rejects(
    scoped.getDeploymentKeyUsage(d.id, key.id, { days: 0 }),
    (e) => e instanceof CloudApiError && e.status === 400 && /"days"/.test(e.message),
  );
  const revoked = await scoped.revokeDeploymentKey(d.id, key.id);
  assert.equal(revoked.enabled, false);
  await scoped.deleteDeployment(d.id);
  await assert.rejects(scoped.getDeployment(d.id), (e) => e instanceof CloudApiError && e.status === 404);

  const stranger = new CloudApiClient({ baseUrl: server.apiUrl, token: "not-a-token", scope: scoped.scope });
  await assert.rejects(stranger.me(), (e) => e instanceof CloudApiError && e.status === 401);
  const started = Date.now();
  await assert.rejects(
    async () => {
      for await (const _ of streamJobEvents({ client: stranger, jobId: completedJobId })) {
      }
    },
    (e) => e instanceof CloudApiError && e.status === 401,
  );
  assert.ok(Date.now() - started < 2000, "no retries on 401");
});
