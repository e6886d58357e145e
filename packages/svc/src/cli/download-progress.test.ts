import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import type { DownloadCompletedEvent, DownloadProgressEvent } from "@svc/wire";
import { formatBytes, formatDownloadBar } from "./download-progress.js";
import { JobProgressPrinter } from "./progress.js";

const SHA = "3f2c1d0e9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e";
const base = { jobId: "j", timestamp: "2026-01-01T00:00:00.000Z" };

function progress(done: number): DownloadProgressEvent {
  return {
    ...base,
    type: "download.progress",
    kind: "model",
    repo: "Qwen/Qwen3-0.6B",
    revision: SHA,
    files: [
      { name: "config.json", bytesDone: 1_000, bytesTotal: 1_000 },
      { name: "model.safetensors", bytesDone: done, bytesTotal: 1_500_000_000 },
    ],
    bytesDone: 1_000 + done,
    bytesTotal: 1_500_001_000,
  };
}

function completed(fromCache: boolean): DownloadCompletedEvent {
  return {
    ...base,
    type: "download.completed",
    kind: "model",
    repo: "Qwen/Qwen3-0.6B",
    revision: SHA,
    bytes: 1_500_001_000,
    fromCache,
  };
}

function sink(isTTY: boolean) {
  let text = "";
  const out = new Writable({
    write(chunk, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  }) as Writable & { isTTY?: boolean };
  out.isTTY = isTTY;
  return { out, text: () => text };
}

test("sizes and the download bar", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(76_900), "76.9 kB");
  assert.equal(formatBytes(1_500_001_000), "1.5 GB");
  assert.equal(
    formatDownloadBar(progress(750_000_000), 10),
    "downloading base model Qwen/Qwen3-0.6B [#####-----] 750 MB / 1.5 GB  50%  (1/2 files)",
  );
});

test("svc start prints a download's start and end lines when not a TTY, once each", () => {
  const s = sink(false);
  const p = new JobProgressPrinter(s.out);
  p.event(progress(0));
  p.event(progress(750_000_000));
  p.event(completed(false));
  p.finish();
  assert.equal(
    s.text(),
    "downloading base model Qwen/Qwen3-0.6B at 3f2c1d0e9b8a: 2 files, 1.5 GB\nbase model Qwen/Qwen3-0.6B at 3f2c1d0e9b8a: 1.5 GB downloaded\n",
  );
});

test("on a TTY the download is one bar redrawn in place, replaced by the end line", () => {
  const s = sink(true);
  const p = new JobProgressPrinter(s.out);
  p.event(progress(750_000_000));
  p.event(completed(true));
  assert.ok(
    s.text().startsWith("\r\x1b[2Kdownloading base model Qwen/Qwen3-0.6B ["),
    JSON.stringify(s.text()),
  );
  assert.ok(s.text().includes("] 750 MB / 1.5 GB  50%  (1/2 files)"), JSON.stringify(s.text()));
  assert.ok(
    s
      .text()
      .endsWith(
        "\r\x1b[2Kbase model Qwen/Qwen3-0.6B at 3f2c1d0e9b8a: 1.5 GB found in the Hugging Face cache\n",
      ),
  );
});
