import assert from "node:assert/strict";
import { test } from "node:test";
import { applyDownloadEvent, type Download, formatDownloadMessage } from "./download-progress.js";

const progress = (done: number) => ({
  type: "download.progress",
  kind: "model",
  repo: "org/m",
  revision: "a".repeat(40),
  files: [
    { name: "config.json", bytesDone: 600, bytesTotal: 600 },
    { name: "model.safetensors", bytesDone: done, bytesTotal: 2_000_000 },
  ],
  bytesDone: 600 + done,
  bytesTotal: 2_000_600,
});

test("progress events update one download per repo; completed fills every file", () => {
  let downloads: Download[] = [];
  downloads = applyDownloadEvent(downloads, "download.progress", progress(500_000));
  downloads = applyDownloadEvent(downloads, "download.progress", progress(1_000_000));
  assert.equal(downloads.length, 1);
  assert.equal(downloads[0].bytesDone, 1_000_600);
  assert.equal(downloads[0].files[1].bytesDone, 1_000_000);
  downloads = applyDownloadEvent(downloads, "download.progress", {
    ...progress(10),
    kind: "dataset",
    repo: "org/d",
  });
  assert.equal(downloads.length, 2);
  downloads = applyDownloadEvent(downloads, "download.completed", {
    kind: "model",
    repo: "org/m",
    revision: "a".repeat(40),
    bytes: 2_000_600,
    fromCache: false,
  });
  assert.equal(downloads[0].done, true);
  assert.deepEqual(
    downloads[0].files.map((f) => f.bytesDone),
    [600, 2_000_000],
  );
  assert.equal(applyDownloadEvent(downloads, "training.log", {}), downloads);
});

test("event log messages", () => {
  assert.equal(
    formatDownloadMessage("download.progress", progress(1_000_000)),
    "model org/m: 1 MB / 2 MB (50%), 1 of 2 files",
  );
  assert.equal(
    formatDownloadMessage("download.completed", {
      kind: "model",
      repo: "org/m",
      revision: "b".repeat(40),
      bytes: 2_000_600,
      fromCache: true,
    }),
    "model org/m @ bbbbbbbbbbbb: in the cache (2 MB)",
  );
  assert.equal(
    formatDownloadMessage("download.completed", {
      kind: "dataset",
      repo: "org/d",
      revision: "",
      bytes: 5e6,
      fromCache: false,
    }),
    "dataset org/d: downloaded 5 MB",
  );
});
