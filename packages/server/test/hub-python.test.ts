// svc's Hugging Face cache and huggingface_hub's are one: huggingface_hub's own
// scan_cache_dir, try_to_load_from_cache and offline hf_hub_download read what
// svc downloaded, and svc reads offline what huggingface_hub's snapshot_download
// fetched from the same loopback Hub. Skipped where python3 lacks
// huggingface_hub (.ci/install installs it from a local wheel store).
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { needs } from "@svc/engine/testing";
import { ensureSnapshot, isModelFile, modelSnapshotComplete } from "../src/hub/index.js";
import { tempDir } from "./harness.js";
import { qwen3Repo } from "./hub-repos.js";
import { TestHub } from "./hub-server.js";

const PYTHON = process.env.SVC_PYTHON ?? "python3";
const hasHuggingfaceHub = spawnSync(PYTHON, ["-c", "import huggingface_hub"]).status === 0;
const run = promisify(execFile);
const REPO = "test-org/qwen3-tiny";

/** Runs Python (asynchronously: the loopback Hub answers from this process) and parses the JSON it prints last. */
async function python(code: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const { stdout } = await run(PYTHON, ["-c", code], {
    env: { ...process.env, HF_HUB_DISABLE_TELEMETRY: "1", ...env },
    encoding: "utf8",
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

describe("the Hugging Face cache shared with huggingface_hub", {
  skip: !hasHuggingfaceHub && needs("huggingface_hub", `${PYTHON} has no huggingface_hub`),
}, () => {
  let hub: TestHub;
  let sha: string;
  const saved = { ...process.env };

  before(async () => {
    hub = await TestHub.start();
    sha = hub.addRepo({ repo: REPO, dir: qwen3Repo(join(tempDir("py-hub"), "qwen")) });
    process.env.HF_ENDPOINT = hub.url;
    delete process.env.HF_HUB_OFFLINE;
    delete process.env.HF_HOME;
  });
  after(async () => {
    process.env = saved;
    await hub.close();
  });

  const model = () =>
    ensureSnapshot({ repo: REPO, kind: "model", wanted: isModelFile, complete: modelSnapshotComplete });

  it("huggingface_hub scans svc's cache and finds its files, offline too", async () => {
    const cache = tempDir("svc-cache");
    process.env.HF_HUB_CACHE = cache;
    const snapshot = await model();
    const seen = await python(
      `
import json
from huggingface_hub import scan_cache_dir, try_to_load_from_cache, hf_hub_download
info = scan_cache_dir(${JSON.stringify(cache)})
repo = [r for r in info.repos if r.repo_id == ${JSON.stringify(REPO)}][0]
revision = list(repo.revisions)[0]
print(json.dumps({
  "repo_type": repo.repo_type,
  "warnings": [str(w) for w in info.warnings],
  "size_on_disk": repo.size_on_disk,
  "commit": revision.commit_hash,
  "refs": sorted(revision.refs),
  "files": sorted(f.file_name for f in revision.files),
  "cached_config": try_to_load_from_cache(${JSON.stringify(REPO)}, "config.json", cache_dir=${JSON.stringify(cache)}),
  "offline_download": hf_hub_download(${JSON.stringify(REPO)}, "model.safetensors", cache_dir=${JSON.stringify(cache)}),
}))`,
      { HF_HUB_OFFLINE: "1" },
    );
    assert.deepEqual(seen.warnings, []);
    assert.equal(seen.repo_type, "model");
    assert.equal(seen.commit, sha);
    assert.deepEqual(seen.refs, ["main"]);
    assert.deepEqual(seen.files, [
      "config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    assert.equal(seen.size_on_disk, snapshot.bytes);
    assert.equal(seen.cached_config, join(snapshot.dir, "config.json"));
    assert.equal(seen.offline_download, join(snapshot.dir, "model.safetensors"));
  });

  it("svc reads offline what huggingface_hub's snapshot_download fetched from the same Hub", async () => {
    const cache = tempDir("python-cache");
    const fetched = await python(
      `
import json
from huggingface_hub import snapshot_download
path = snapshot_download(${JSON.stringify(REPO)}, allow_patterns=["*.json", "*.safetensors"], cache_dir=${JSON.stringify(cache)})
print(json.dumps({"path": path}))`,
      { HF_ENDPOINT: hub.url },
    );
    process.env.HF_HUB_CACHE = cache;
    process.env.HF_HUB_OFFLINE = "1";
    hub.clearRequests();
    try {
      const snapshot = await model();
      assert.equal(snapshot.dir, fetched.path);
      assert.equal(snapshot.revision, sha);
      assert.equal(snapshot.fromCache, true);
      assert.deepEqual(hub.requests, []);
    } finally {
      delete process.env.HF_HUB_OFFLINE;
    }
  });
});
