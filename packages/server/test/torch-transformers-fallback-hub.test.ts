// A model svc's engine does not implement (transformers-only-fixture.ts) on a
// loopback Hugging Face Hub (hub-server.ts): a job on it before it is cached is
// refused saying how to pull it, a pull a serving request starts fails before
// any weight (the engine cannot serve it), POST /v1/models/pull fetches it,
// and then a job is accepted with backend torch + torchModel transformers only.
// Needs a Python with torch and transformers to write the model; skipped,
// saying so, where there is none.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { needs } from "@svc/engine/testing";
import {
  call,
  chatJsonl,
  type Identity,
  newIdentity,
  serverFor,
  tempDir,
  until,
  uploadDataset,
} from "./harness.js";
import { TestHub } from "./hub-server.js";
import { findPython } from "./torch-harness.js";
import { GPT2_JOB_HYPERPARAMETERS, writeTinyGpt2 } from "./transformers-only-fixture.js";

const { python: PYTHON, skip } = findPython("import torch, transformers", "has torch and transformers");

describe("such a model on the Hugging Face Hub", { skip: skip && needs("transformers/peft", skip) }, () => {
  const HUB_GPT2 = "test-org/gpt2";
  let hub: TestHub;
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  before(async () => {
    hub = await TestHub.start();
    const repo = join(tempDir("hub-gpt2"), "gpt2");
    await writeTinyGpt2(PYTHON, repo);
    hub.addRepo({ repo: HUB_GPT2, dir: repo });
    server = await serverFor(
      "sqlite",
      ["--hub-models", "test-org/*,cached", "--workers", "0"],
      hub.serverEnv(tempDir("hf-home")),
    );
    id = await newIdentity(server.apiUrl);
  });
  after(async () => {
    await server?.cleanup();
    await hub?.close();
  });
  const api = (method: string, path: string, json?: unknown) =>
    call(server.apiUrl, method, path, { token: id.token, json });

  it("refuses a job on it before it is downloaded, saying how to pull it; pulled, takes the transformers job only", async () => {
    const dataset = await uploadDataset(server.apiUrl, id, chatJsonl(8));
    const job = (backend: string) =>
      api("POST", `/v1/jobs?${id.scope}`, {
        name: "hub gpt2",
        baseModel: HUB_GPT2,
        datasetId: dataset.id,
        backend,
        hyperparameters: GPT2_JOB_HYPERPARAMETERS,
      });
    const early = await job("torch");
    assert.equal(early.status, 400, JSON.stringify(early.body));
    assert.equal(early.body.error.code, "unsupported_model");
    assert.match(early.body.error.message, /architecture GPT2LMHeadModel is not supported/);
    assert.match(early.body.error.message, /POST \/v1\/models\/pull \{"model":"test-org\/gpt2"\}/);
    // A request to serve it starts no download: the pull fails, saying it cannot be served.
    const chat = await api("POST", "/v1/inference/chat", {
      baseModel: HUB_GPT2,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(chat.status, 409, JSON.stringify(chat.body));
    const servePull = await until("the serving pull to end", async () => {
      const pull = (
        await api("GET", `/v1/models/pull/${chat.body.error.message.match(/pull ([0-9a-f-]+)/)[1]}`)
      ).body.pull;
      return pull.status === "downloading" ? null : pull;
    });
    assert.equal(servePull.status, "failed");
    assert.equal(servePull.error.code, "unsupported_architecture");
    assert.match(servePull.error.message, /cannot be served; it trains with transformers \+ peft/);

    const started = await api("POST", "/v1/models/pull", { model: HUB_GPT2 });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const pulled = await until("the pull", async () => {
      const pull = (await api("GET", `/v1/models/pull/${started.body.pull.id}`)).body.pull;
      return pull.status === "downloading" ? null : pull;
    });
    assert.equal(pulled.status, "completed", JSON.stringify(pulled));
    const listed = (await api("GET", "/v1/models")).body.models.find(
      (m: { name: string }) => m.name === HUB_GPT2,
    );
    assert.equal(listed.family, "transformers");
    assert.equal(listed.source, "hub");
    const engine = await job("engine");
    assert.equal(engine.status, 400, JSON.stringify(engine.body));
    assert.equal(engine.body.error.code, "unsupported_architecture");
    const accepted = await job("torch");
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
    assert.equal(accepted.body.job.backend, "torch");
  });
});
