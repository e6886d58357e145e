import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { createRandomModel } from "@svc/engine/testing";
import { TestHub } from "../../test/hub-server.js";
import type { HubError } from "./hub-error.js";
import { isModelFile, modelSnapshotComplete } from "./model-files.js";
import { ensureSnapshot, type HubProgress } from "./snapshot.js";

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), `svc-hub-${prefix}-`));
const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("ensureSnapshot against a loopback Hub", () => {
  let hub: TestHub;
  let modelDir: string;
  let sha: string;
  const saved = { ...process.env };

  before(async () => {
    hub = await TestHub.start();
    modelDir = join(temp("model"), "tiny");
    await createRandomModel(modelDir, { seed: 3 });
    writeFileSync(join(modelDir, "pytorch_model.bin"), "pickled weights: never fetched");
    mkdirSync(join(modelDir, "onnx"));
    writeFileSync(join(modelDir, "onnx", "model.onnx"), "another runtime's copy");
    sha = hub.addRepo({ repo: "test-org/tiny", dir: modelDir });
    hub.addRepo({ repo: "test-org/gated", dir: modelDir, gated: true });
  });
  after(() => hub.close());
  beforeEach(() => {
    for (const key of ["HF_HUB_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE", "HF_TOKEN_PATH"])
      delete process.env[key];
    process.env.HF_HOME = temp("home");
    process.env.HF_ENDPOINT = hub.url;
    hub.clearRequests();
    hub.chunkDelayMs = 0;
  });
  after(() => {
    process.env = saved;
  });

  const model = (repo = "test-org/tiny", extra: Partial<Parameters<typeof ensureSnapshot>[0]> = {}) =>
    ensureSnapshot({ repo, kind: "model", wanted: isModelFile, complete: modelSnapshotComplete, ...extra });

  it("downloads the model's files into the Hugging Face cache layout, then answers from the cache without asking the Hub", async () => {
    const seen: HubProgress[][] = [];
    const snapshot = await model("test-org/tiny", { onProgress: (files) => seen.push(files) });
    const root = join(process.env.HF_HOME!, "hub", "models--test-org--tiny");
    assert.equal(snapshot.revision, sha);
    assert.equal(snapshot.dir, join(root, "snapshots", sha));
    assert.equal(snapshot.fromCache, false);
    assert.equal(readFileSync(join(root, "refs", "main"), "utf8"), sha);
    const weights = join(snapshot.dir, "model.safetensors");
    assert.ok(lstatSync(weights).isSymbolicLink());
    const blob = sha256(join(modelDir, "model.safetensors"));
    assert.equal(readlinkSync(weights), `../../blobs/${blob}`);
    assert.ok(readFileSync(weights).equals(readFileSync(join(modelDir, "model.safetensors"))));
    const configBlob = createHash("sha1")
      .update(`blob ${readFileSync(join(modelDir, "config.json")).length}\0`)
      .update(readFileSync(join(modelDir, "config.json")))
      .digest("hex");
    assert.equal(readlinkSync(join(snapshot.dir, "config.json")), `../../blobs/${configBlob}`);
    assert.ok(!existsSync(join(snapshot.dir, "pytorch_model.bin")));
    assert.ok(!existsSync(join(snapshot.dir, "onnx")));
    assert.equal(hub.requestsTo("pytorch_model.bin").length, 0);
    const last = seen.at(-1)!;
    assert.ok(last.every((f) => f.bytesDone === f.bytesTotal && f.bytesTotal > 0));
    assert.deepEqual(
      last.map((f) => f.file).sort(),
      ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
        .filter((f) => existsSync(join(modelDir, f)))
        .sort(),
    );

    hub.clearRequests();
    const again = await model();
    assert.equal(again.fromCache, true);
    assert.equal(again.revision, sha);
    assert.equal(hub.requests.length, 0, "a cached snapshot needs no request to the Hub");
  });

  it("resumes a cut download with a Range request from the bytes already on disk", async () => {
    hub.cutAfter(12_000);
    const snapshot = await model();
    assert.equal(
      sha256(join(snapshot.dir, "model.safetensors")),
      sha256(join(modelDir, "model.safetensors")),
    );
    const blobGets = hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET");
    assert.equal(blobGets.length, 2, JSON.stringify(blobGets));
    assert.equal(blobGets[0]!.range, null);
    assert.equal(blobGets[1]!.range, "bytes=12000-");
  });

  it("continues a partial blob another run left behind", async () => {
    const blob = sha256(join(modelDir, "model.safetensors"));
    const blobs = join(process.env.HF_HOME!, "hub", "models--test-org--tiny", "blobs");
    mkdirSync(blobs, { recursive: true });
    writeFileSync(
      join(blobs, `${blob}.incomplete`),
      readFileSync(join(modelDir, "model.safetensors")).subarray(0, 5000),
    );
    const snapshot = await model();
    assert.equal(sha256(join(snapshot.dir, "model.safetensors")), blob);
    assert.deepEqual(
      hub.requestsTo("/lfs-blobs/").map((r) => r.range),
      ["bytes=5000-"],
    );
  });

  it("shares one download between concurrent callers", async () => {
    const [a, b] = await Promise.all([model(), model()]);
    assert.equal(a.dir, b.dir);
    assert.equal(hub.requestsTo("/lfs-blobs/").length, 1);
    assert.equal(hub.requestsTo("/revision/").length, 1);
  });

  it("gives a caller that joined a narrower download the files it wanted", async () => {
    process.env.HF_HOME = temp("home");
    const configOnly = ensureSnapshot({
      repo: "test-org/tiny",
      kind: "model",
      wanted: (p) => p === "config.json",
    });
    const [config, full] = await Promise.all([configOnly, model()]);
    assert.equal(config.revision, full.revision);
    assert.ok(existsSync(join(full.dir, "model.safetensors")));
  });

  it("keeps processes sharing a cache apart: one downloads each blob, the other waits and uses it", async () => {
    // Slow enough that both processes are in the download at once (each asks the Hub for the revision).
    hub.chunkDelayMs = 1000;
    const script = `
      const { ensureSnapshot, isModelFile, modelSnapshotComplete } = await import(${JSON.stringify(new URL("./index.js", import.meta.url).href)});
      const s = await ensureSnapshot({ repo: "test-org/tiny", kind: "model", wanted: isModelFile, complete: modelSnapshotComplete });
      console.log(JSON.stringify({ revision: s.revision, dir: s.dir }));`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          ["--input-type=module", "-e", script],
          { env: process.env },
          (error, stdout) => (error ? reject(error) : resolve(stdout)),
        );
      });
    try {
      const [a, b] = (await Promise.all([run(), run()])).map((out) => JSON.parse(out));
      assert.deepEqual(a, b);
      assert.equal(a.revision, sha);
      assert.equal(hub.requestsTo("/revision/").length, 2);
      assert.equal(hub.requestsTo("/lfs-blobs/").filter((r) => r.method === "GET").length, 1);
      assert.equal(sha256(join(a.dir, "model.safetensors")), sha256(join(modelDir, "model.safetensors")));
      assert.deepEqual(
        readdirSync(join(process.env.HF_HOME!, "hub", ".locks", "models--test-org--tiny")),
        [],
      );
    } finally {
      hub.chunkDelayMs = 0;
    }
  });

  it("refuses a cold cache under HF_HUB_OFFLINE=1 without a request", async () => {
    process.env.HF_HUB_OFFLINE = "1";
    await assert.rejects(model(), (error: HubError) => {
      assert.equal(error.code, "hub_offline");
      assert.match(error.message, /HF_HUB_OFFLINE=1/);
      return true;
    });
    assert.equal(hub.requests.length, 0);
  });

  it("uses a warm cache under HF_HUB_OFFLINE=1", async () => {
    await model();
    process.env.HF_HUB_OFFLINE = "1";
    hub.clearRequests();
    assert.equal((await model()).revision, sha);
    assert.equal(hub.requests.length, 0);
  });

  it("names HF_TOKEN for a gated repo without a token, and downloads it with the token file", async () => {
    await assert.rejects(model("test-org/gated"), (error: HubError) => {
      assert.equal(error.code, "hub_gated");
      assert.match(error.message, /HF_TOKEN/);
      return true;
    });
    hub.tokens.add("hf_testtoken");
    process.env.HF_TOKEN = "hf_wrong";
    await assert.rejects(model("test-org/gated"), /has no access/);
    delete process.env.HF_TOKEN;
    writeFileSync(join(process.env.HF_HOME!, "token"), "hf_testtoken\n");
    const snapshot = await model("test-org/gated");
    assert.ok(existsSync(join(snapshot.dir, "model.safetensors")));
    assert.ok(
      hub
        .requestsTo("/lfs-blobs/")
        .every((r) => r.authorization === null || r.authorization === "Bearer hf_testtoken"),
    );
  });

  it("says a repo or revision does not exist", async () => {
    await assert.rejects(model("test-org/nothing"), (e: HubError) => e.code === "hub_not_found");
    await assert.rejects(
      model("test-org/tiny", { revision: "v9" }),
      (e: HubError) => e.code === "hub_not_found",
    );
  });

  it("names HF_ENDPOINT when the Hub cannot be reached", async () => {
    process.env.HF_ENDPOINT = "http://127.0.0.1:9";
    await assert.rejects(
      model(),
      (e: HubError) => e.code === "hub_unreachable" && /HF_ENDPOINT/.test(e.message),
    );
  });

  it("stops on cancel, keeping the partial blob to resume", async () => {
    hub.chunkDelayMs = 200;
    const controller = new AbortController();
    const pending = model("test-org/tiny", {
      signal: controller.signal,
      onProgress: (files) => {
        if (files.some((f) => f.file === "model.safetensors" && f.bytesDone > 0)) controller.abort();
      },
    });
    await assert.rejects(pending, (e: HubError) => e.code === "hub_cancelled");
    hub.chunkDelayMs = 0;
    const snapshot = await model();
    assert.equal(
      sha256(join(snapshot.dir, "model.safetensors")),
      sha256(join(modelDir, "model.safetensors")),
    );
  });
});
