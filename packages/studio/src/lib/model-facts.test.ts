import assert from "node:assert/strict";
import { test } from "node:test";
import {
  filterModels,
  formatBytes,
  formatCount,
  looksLikeHubId,
  modelBadge,
  modelFacts,
  pullSummary,
} from "./model-facts.js";

test("parameter counts and sizes in short units", () => {
  assert.equal(formatCount(135_000_000), "135M");
  assert.equal(formatCount(1_540_000_000), "1.5B");
  assert.equal(formatCount(494_032_768), "494M");
  assert.equal(formatCount(4_200), "4.2K");
  assert.equal(formatCount(12), "12");
  assert.equal(formatBytes(1_234_567), "1.2 MB");
  assert.equal(formatBytes(988_000_000), "988 MB");
  assert.equal(formatBytes(512), "512 B");
});

test("badges: bundled, local, cached with its revision, not downloaded; none from an older server", () => {
  assert.equal(modelBadge({ source: "bundled", cached: true })?.text, "bundled");
  assert.equal(modelBadge({ source: "local", cached: true })?.text, "local");
  const cached = modelBadge({
    source: "hub",
    cached: true,
    revision: "0123456789abcdef0123",
    sizeBytes: 2_000_000,
  });
  assert.deepEqual(cached, {
    text: "cached",
    tone: "on",
    title: "In the Hugging Face cache at 0123456789ab, 2 MB",
  });
  assert.equal(modelBadge({ source: "hub", cached: false })?.tone, "off");
  assert.equal(modelBadge({}), null);
});

test("facts, filtering and Hub ids", () => {
  assert.equal(
    modelFacts({ family: "qwen2", parameters: 494_032_768, contextLength: 32768 }),
    "qwen2 · 494M params · 32,768 ctx",
  );
  const models = [{ name: "svc/pico-llama" }, { name: "Qwen/Qwen2.5-0.5B-Instruct" }];
  assert.deepEqual(
    filterModels(models, "qwen").map((m) => m.name),
    ["Qwen/Qwen2.5-0.5B-Instruct"],
  );
  assert.equal(filterModels(models, " ").length, 2);
  assert.ok(looksLikeHubId("Qwen/Qwen2.5-0.5B-Instruct"));
  assert.ok(looksLikeHubId("org/model@v1.0"));
  assert.ok(!looksLikeHubId("pico-llama"));
  assert.ok(!looksLikeHubId("a/b/c"));
});

test("a pull's summary: asking, bytes and files while it downloads, then where the bytes came from", () => {
  const files = [
    { name: "config.json", bytesDone: 800, bytesTotal: 800 },
    { name: "model.safetensors", bytesDone: 20_000, bytesTotal: 69_448 },
  ];
  const base = { status: "downloading" as const, files: [], bytesDone: 0, bytesTotal: 0, fromCache: null };
  assert.equal(pullSummary(base), "asking the Hub…");
  assert.equal(
    pullSummary({ ...base, files, bytesDone: 20_800, bytesTotal: 70_248 }),
    "20.8 kB / 70.2 kB · 1 of 2 files",
  );
  const done = { ...base, status: "completed" as const, files, bytesDone: 70_248, bytesTotal: 70_248 };
  assert.equal(pullSummary({ ...done, fromCache: false }), "downloaded 70.2 kB");
  assert.equal(pullSummary({ ...done, fromCache: true }), "in the cache, 70.2 kB");
});
