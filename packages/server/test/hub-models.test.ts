// Hub models through real `svc server` processes against the loopback Hub
// (hub-server.ts): HF_ENDPOINT points at it and HF_HOME is a fresh folder. A
// job on a Hub id downloads (events before training.started), caches in the
// Hugging Face layout and trains; the next job needs no request to the Hub;
// a cut download resumes with Range; cancel during a download; and the
// refusals: HF_HUB_OFFLINE=1 with a cold cache, a gated repo without a token,
// a name --hub-models does not allow, a model too large for the machine.
import assert from "node:assert/strict";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  call,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  serverFor,
  tempDir,
  uploadDataset,
} from "./harness.js";
import { hugeQwen3Repo, qwen3Repo, shardedQwen3Repo } from "./hub-repos.js";
import { TestHub } from "./hub-server.js";

const QWEN = "test-org/qwen3-tiny";
const SHARDED = "test-org/qwen3-sharded";
const GATED = "test-org/qwen3-gated";
const HUGE = "test-org/qwen3-huge";
const SLOW = "test-org/qwen3-slow";
const GONE = "test-org/qwen3-gone";
const SHARED = "test-org/qwen3-shared";
const STRANGE = "test-org/qwen3-strange";

const hyperparameters = {
  lora: { r: 4, alpha: 8, maxLength: 64 },
  maxSteps: 2,
  batchSize: 2,
  learningRate: 1e-3,
};

type Event = { type: string } & Record<string, unknown>;
const eventsOf = async (apiUrl: string, id: Identity, jobId: string): Promise<Event[]> =>
  (await eventsUntilEnd(apiUrl, id.token, jobId, 120_000))
    .filter((f) => f.event !== "end")
    .map((f) => JSON.parse(f.data));

/**
 * The cache read the way huggingface_hub lays it out (file_download.py):
 * refs/<revision> holds the commit; snapshots/<commit>/<file> is a relative
 * symlink into blobs/, named by the file's etag.
 */
function readHfCache(hubCache: string, repo: string, file: string) {
  const root = join(hubCache, `models--${repo.replace("/", "--")}`);
  const commit = readFileSync(join(root, "refs", "main"), "utf8");
  const link = join(root, "snapshots", commit, file);
  const target = readlinkSync(link);
  return {
    commit,
    isLink: lstatSync(link).isSymbolicLink(),
    target,
    blob: resolve(dirname(link), target),
    root,
  };
}

describe("Hub models through svc server", () => {
  let hub: TestHub;
  let hfHome: string;
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  let datasetId: string;
  const shas: Record<string, string> = {};

  const createJob = (baseModel: string, extra: Record<string, unknown> = {}) =>
    call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
      token: id.token,
      json: { name: "hub run", baseModel, datasetId, hyperparameters, ...extra },
    });

  before(async () => {
    hub = await TestHub.start();
    const repos = tempDir("hub-repos");
    shas.qwen = hub.addRepo({ repo: QWEN, dir: qwen3Repo(join(repos, "qwen")) });
    shas.sharded = hub.addRepo({ repo: SHARDED, dir: shardedQwen3Repo(join(repos, "sharded")) });
    shas.gated = hub.addRepo({ repo: GATED, dir: qwen3Repo(join(repos, "gated")), gated: true });
    hub.addRepo({ repo: HUGE, dir: hugeQwen3Repo(join(repos, "huge")) });
    hub.addRepo({ repo: SLOW, dir: qwen3Repo(join(repos, "slow")) });
    hub.addRepo({ repo: GONE, dir: qwen3Repo(join(repos, "gone")) });
    hub.addRepo({ repo: SHARED, dir: qwen3Repo(join(repos, "shared")) });
    const strange = qwen3Repo(join(repos, "strange"));
    const config = JSON.parse(readFileSync(join(strange, "config.json"), "utf8"));
    writeFileSync(join(strange, "config.json"), JSON.stringify({ ...config, mystery_switch: true }));
    hub.addRepo({ repo: STRANGE, dir: strange });
    hub.tokens.add("hf_test_token");
    hfHome = tempDir("hf-home");
    server = await serverFor(
      "sqlite",
      ["--hub-models", "test-org/*,cached", "--workers", "2"],
      hub.serverEnv(hfHome),
    );
    id = await newIdentity(server.apiUrl);
    datasetId = (await uploadDataset(server.apiUrl, id)).id;
  });
  after(async () => {
    await server?.cleanup();
    await hub?.close();
  });

  it("downloads a Hub model as part of the job, caches it where transformers looks, and trains", async () => {
    const before = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
    assert.ok(!before.body.models.some((m: { name: string }) => m.name === QWEN));

    const created = await createJob(QWEN);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const events = await eventsOf(server.apiUrl, id, created.body.job.id);
    const types = events.map((e) => e.type);
    const started = types.indexOf("training.started");
    const completed = types.indexOf("download.completed");
    assert.ok(
      types.indexOf("download.progress") >= 0 && types.indexOf("download.progress") < completed,
      types.join(),
    );
    assert.ok(completed >= 0 && completed < started, types.join());
    assert.equal(types.at(-1), "training.completed", JSON.stringify(events.at(-1)));
    const progress = events.filter((e) => e.type === "download.progress");
    for (const p of progress) {
      assert.equal(p.repo, QWEN);
      assert.equal(p.revision, shas.qwen);
      assert.deepEqual((p.files as { name: string }[]).map((f) => f.name).sort(), [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
      ]);
    }
    assert.deepEqual(
      { ...events[completed], jobId: undefined, timestamp: undefined },
      {
        type: "download.completed",
        kind: "model",
        repo: QWEN,
        revision: shas.qwen,
        bytes: events[completed]!.bytes,
        fromCache: false,
        jobId: undefined,
        timestamp: undefined,
      },
    );

    const job = await call(server.apiUrl, "GET", `/v1/jobs/${created.body.job.id}`, { token: id.token });
    assert.equal(job.body.job.baseModelRevision, shas.qwen);
    const adapterConfig = JSON.parse(
      readFileSync(join(server.dataDir, "jobs", created.body.job.id, "final", "adapter_config.json"), "utf8"),
    );
    assert.equal(adapterConfig.base_model_name_or_path, QWEN);
    assert.equal(adapterConfig.revision, shas.qwen);

    // Only the files the engine reads were asked for: no pickled weights, no other runtime's copy.
    assert.equal(hub.requestsTo("pytorch_model.bin").length, 0);
    assert.equal(hub.requestsTo("onnx").length, 0);

    const cache = readHfCache(join(hfHome, "hub"), QWEN, "config.json");
    assert.equal(cache.commit, shas.qwen);
    assert.ok(cache.isLink);
    assert.match(cache.target, /^\.\.\/\.\.\/blobs\/[0-9a-f]{40}$/);
    assert.deepEqual(JSON.parse(readFileSync(cache.blob, "utf8")).architectures, ["Qwen3ForCausalLM"]);
    const weights = readHfCache(join(hfHome, "hub"), QWEN, "model.safetensors");
    assert.match(weights.target, /^\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);
    assert.deepEqual(readdirSync(join(cache.root, "snapshots", shas.qwen)).sort(), [
      "config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);

    const listed = await call(server.apiUrl, "GET", "/v1/models", { token: id.token });
    const model = listed.body.models.find((m: { name: string }) => m.name === QWEN);
    assert.equal(model.source, "hub");
    assert.equal(model.cached, true);
    assert.equal(model.revision, shas.qwen);
    assert.equal(model.family, "qwen3");
    assert.ok(model.sizeBytes > 0);
    const bundled = listed.body.models.find((m: { name: string }) => m.name === "test/tiny");
    assert.equal(bundled.source, "local");
  });

  it("trains a second job from the cache without a single request to the Hub", async () => {
    hub.clearRequests();
    const created = await createJob(QWEN);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const events = await eventsOf(server.apiUrl, id, created.body.job.id);
    assert.equal(events.at(-1)!.type, "training.completed");
    const download = events.find((e) => e.type === "download.completed")!;
    assert.equal(download.fromCache, true);
    assert.ok(!events.some((e) => e.type === "download.progress"));
    assert.deepEqual(hub.requests, []);
  });

  it("serves the cached Hub model and the adapter trained on it: Playground chat and a base_model deployment", async () => {
    const messages = [{ role: "user", content: "hi" }];
    const base = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
      token: id.token,
      json: { messages, baseModel: QWEN, maxTokens: 4, seed: 1 },
    });
    assert.equal(base.status, 200, JSON.stringify(base.body));
    assert.equal(base.body.model, QWEN);
    const jobs = await call(server.apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
    const trained = jobs.body.jobs.find(
      (j: { baseModel: string; status: string }) => j.baseModel === QWEN && j.status === "completed",
    );
    const adapter = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
      token: id.token,
      json: { messages, adapter: { kind: "final", jobId: trained.id }, maxTokens: 4, seed: 1 },
    });
    assert.equal(adapter.status, 200, JSON.stringify(adapter.body));
    const deployment = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: { slug: `hub-${process.pid}`, target: { kind: "base_model", baseModel: QWEN } },
    });
    assert.equal(deployment.status, 201, JSON.stringify(deployment.body));
    const uncached = await call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
      token: id.token,
      json: { messages, baseModel: "test-org/qwen3-elsewhere" },
    });
    // Not cached, and the policy lets the server fetch it: the chat starts a pull (hub-pulls.test.ts).
    assert.equal(uncached.status, 409);
    assert.equal(uncached.body.error.code, "model_downloading");
  });

  it("resumes a download cut halfway with a Range request, sharded checkpoints included", async () => {
    hub.clearRequests();
    hub.cutAfter(20_000);
    const created = await createJob(SHARDED);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const events = await eventsOf(server.apiUrl, id, created.body.job.id);
    assert.equal(events.at(-1)!.type, "training.completed", JSON.stringify(events.at(-1)));
    const blobs = hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET");
    const resumed = blobs.filter((r) => r.range === "bytes=20000-");
    assert.equal(resumed.length, 1, JSON.stringify(blobs));
    const snapshot = join(hfHome, "hub", `models--${SHARDED.replace("/", "--")}`, "snapshots", shas.sharded!);
    assert.deepEqual(
      readdirSync(snapshot)
        .filter((f) => f.endsWith(".safetensors"))
        .sort(),
      ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"],
    );
    assert.ok(existsSync(join(snapshot, "model.safetensors.index.json")));
  });

  it("shares one download between two jobs that need the same model at once", async () => {
    hub.clearRequests();
    hub.chunkDelayMs = 100;
    try {
      const jobs = await Promise.all([createJob(SHARED), createJob(SHARED)]);
      for (const job of jobs) assert.equal(job.status, 201, JSON.stringify(job.body));
      const runs = await Promise.all(jobs.map((job) => eventsOf(server.apiUrl, id, job.body.job.id)));
      for (const events of runs) {
        assert.equal(events.at(-1)!.type, "training.completed");
        assert.ok(events.some((e) => e.type === "download.completed"));
      }
      const weights = hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET");
      assert.equal(weights.length, 1, JSON.stringify(weights));
    } finally {
      hub.chunkDelayMs = 0;
    }
  });

  it("cancels a job while its model downloads", async () => {
    hub.chunkDelayMs = 400;
    try {
      const created = await createJob(SLOW);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const jobId = created.body.job.id;
      // Wait until bytes flow, then cancel.
      for (let i = 0; i < 100 && hub.requestsTo("/lfs-blobs/").length === 0; i++)
        await new Promise((r) => setTimeout(r, 100));
      const cancel = await call(server.apiUrl, "POST", `/v1/jobs/${jobId}/cancel`, { token: id.token });
      assert.equal(cancel.status, 200);
      const events = await eventsOf(server.apiUrl, id, jobId);
      assert.equal(events.at(-1)!.type, "training.cancelled", JSON.stringify(events));
      assert.ok(!events.some((e) => e.type === "training.started"));
    } finally {
      hub.chunkDelayMs = 0;
    }
  });

  it("fails the job with the Hub's reason when the download fails", async () => {
    const created = await createJob(GONE);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // config.json is cached now; the repo leaves the Hub before the worker fetches the rest.
    hub.removeRepo("model", GONE);
    const events = await eventsOf(server.apiUrl, id, created.body.job.id);
    const failed = events.at(-1)!;
    assert.equal(failed.type, "training.failed");
    assert.match(failed.error as string, /test-org\/qwen3-gone: not found on the Hub/);
  });

  it("names HF_TOKEN for a gated repo without a token, and trains on it with the token file", async () => {
    const refused = await createJob(GATED);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "hub_gated");
    assert.match(refused.body.error.message, /"baseModel": .*HF_TOKEN/);
    writeFileSync(join(hfHome, "token"), "hf_test_token\n");
    const created = await createJob(GATED);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const events = await eventsOf(server.apiUrl, id, created.body.job.id);
    assert.equal(events.at(-1)!.type, "training.completed");
  });

  it("refuses a name --hub-models does not allow, naming the rule", async () => {
    const refused = await createJob("other-org/some-model");
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "hub_model_refused");
    assert.match(refused.body.error.message, /svc server --hub-models test-org\/\*,cached/);
    assert.equal(hub.requestsTo("other-org").length, 0);
  });

  it("refuses a Hub model whose config.json has a key the engine does not know, naming it, before downloading weights", async () => {
    hub.clearRequests();
    const refused = await createJob(STRANGE);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "unsupported_model");
    assert.match(
      refused.body.error.message,
      /"baseModel": Hub model test-org\/qwen3-strange: .*mystery_switch/,
    );
    assert.equal(hub.requestsTo("model.safetensors").length + hub.requestsTo("/lfs-blobs/").length, 0);
  });

  it("refuses a model too large for this machine from its config alone", async () => {
    hub.clearRequests();
    const refused = await createJob(HUGE);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "model_too_large");
    assert.match(refused.body.error.message, /needs about [\d.]+ (GB|TB) to train .* this machine has/);
    assert.deepEqual(
      hub.requestsTo("/resolve/").map((r) => r.path.split("/").pop()),
      ["config.json"],
    );
  });
});

describe("Hub models with HF_HUB_OFFLINE=1", () => {
  it("refuses a job on a model that is not cached, naming HF_HUB_OFFLINE", async () => {
    const hub = await TestHub.start();
    const server = await serverFor("sqlite", ["--hub-models", "test-org/*"], {
      ...process.env,
      HF_HOME: tempDir("hf-home"),
      HF_ENDPOINT: hub.url,
      HF_HUB_OFFLINE: "1",
    });
    try {
      hub.addRepo({ repo: QWEN, dir: qwen3Repo(join(tempDir("hub-repos"), "qwen")) });
      const id = await newIdentity(server.apiUrl);
      const dataset = await uploadDataset(server.apiUrl, id);
      const refused = await call(server.apiUrl, "POST", `/v1/jobs?${id.scope}`, {
        token: id.token,
        json: { name: "offline", baseModel: QWEN, datasetId: dataset.id, hyperparameters },
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, "hub_offline");
      assert.match(refused.body.error.message, /HF_HUB_OFFLINE=1/);
      assert.deepEqual(hub.requests, []);
    } finally {
      await server.cleanup();
      await hub.close();
    }
  });
});
