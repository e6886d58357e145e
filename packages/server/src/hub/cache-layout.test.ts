// The cache's snapshot links: linking is idempotent, replaces a stale link,
// and two processes linking the same files at once both succeed (one of them
// used to fail with EEXIST, reported as the Hub being unreachable); a cache
// that cannot be written is reported as such (hub_cache, 500).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { RepoCache } from "./cache-layout.js";
import { hubErrorOf, hubErrorStatus } from "./hub-error.js";

const SHA = "35138f0d44e54332c66ea088f93265419310b8b8";

async function cacheWithBlobs(count: number): Promise<RepoCache> {
  const cache = new RepoCache(await mkdtemp(join(tmpdir(), "svc-cache-layout-")), "model", "org/tiny");
  mkdirSync(join(cache.root, "blobs"), { recursive: true });
  for (let i = 0; i < count; i++) writeFileSync(cache.blobPath(`etag${i}`), `blob ${i}`);
  return cache;
}

describe("RepoCache.linkSnapshotFile", () => {
  it("links a file to its blob, keeps a right link and replaces a stale one", async () => {
    const cache = await cacheWithBlobs(2);
    cache.linkSnapshotFile(SHA, "sub/config.json", "etag0");
    const link = join(cache.snapshotDir(SHA), "sub", "config.json");
    assert.equal(readlinkSync(link), "../../../blobs/etag0");
    assert.equal(readFileSync(link, "utf8"), "blob 0");
    cache.linkSnapshotFile(SHA, "sub/config.json", "etag0");
    cache.linkSnapshotFile(SHA, "sub/config.json", "etag1");
    assert.equal(readFileSync(link, "utf8"), "blob 1");
    assert.deepEqual(cache.snapshotFiles(SHA), [{ path: "sub/config.json", bytes: 6 }]);
    assert.deepEqual(readdirSync(cache.lockDir()), [], "no link is left beside the locks");
  });

  it("lets processes link the same files at once", async () => {
    const files = 200;
    const cache = await cacheWithBlobs(files);
    const module = new URL("./cache-layout.js", import.meta.url).href;
    const script = `
      const { RepoCache } = await import(${JSON.stringify(module)});
      const cache = new RepoCache(${JSON.stringify(cache.cacheDir)}, "model", "org/tiny");
      for (let i = 0; i < ${files}; i++) cache.linkSnapshotFile(${JSON.stringify(SHA)}, "f" + i + ".json", "etag" + i);
    `;
    const run = () =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
        let stderr = "";
        child.stderr.on("data", (chunk) => {
          stderr += chunk;
        });
        child.on("close", (code) => resolve({ code, stderr }));
      });
    const results = await Promise.all([run(), run(), run()]);
    for (const { code, stderr } of results) assert.equal(code, 0, stderr);
    const linked = cache.snapshotFiles(SHA);
    assert.equal(linked.length, files);
    for (let i = 0; i < files; i++)
      assert.equal(readFileSync(join(cache.snapshotDir(SHA), `f${i}.json`), "utf8"), `blob ${i}`);
  });
});

describe("hubErrorOf", () => {
  const context = {
    kind: "model" as const,
    repo: "org/tiny",
    revision: "main",
    endpoint: "http://hub",
    hasToken: false,
  };

  it("reports a cache it cannot write as hub_cache (500), and a socket failure as hub_unreachable (502)", () => {
    const denied = Object.assign(new Error("EACCES: permission denied"), {
      code: "EACCES",
      syscall: "symlink",
      path: "/cache/snapshots/x",
    });
    const cacheError = hubErrorOf(denied, context);
    assert.equal(cacheError.code, "hub_cache");
    assert.match(
      cacheError.message,
      /could not be written \(EACCES on symlink \/cache\/snapshots\/x\).*HF_HUB_CACHE/,
    );
    assert.equal(hubErrorStatus(cacheError.code), 500);
    // a full disk while a download streams to its file: no path on the error
    const full = Object.assign(new Error("ENOSPC: no space left on device"), {
      code: "ENOSPC",
      syscall: "write",
    });
    assert.equal(hubErrorOf(full, context).code, "hub_cache");
    // fetch's socket errors come as a TypeError with the code in its cause
    const refused = Object.assign(new TypeError("fetch failed"), {
      cause: { code: "ECONNREFUSED", message: "connect ECONNREFUSED" },
    });
    const unreachable = hubErrorOf(refused, context);
    assert.equal(unreachable.code, "hub_unreachable");
    assert.match(unreachable.message, /ECONNREFUSED/);
    assert.equal(hubErrorStatus("hub_unreachable"), 502);
    assert.equal(hubErrorStatus("hub_gated"), 400);
  });
});
