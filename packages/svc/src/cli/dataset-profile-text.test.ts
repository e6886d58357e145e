import assert from "node:assert/strict";
import { test } from "node:test";
import type { ReadyDatasetProfile } from "@svc/wire";
import { formatDatasetProfile } from "./dataset-profile-text.js";

const ready: ReadyDatasetProfile = {
  datasetId: "d",
  baseModel: "svc/pico-llama",
  maxLength: 128,
  status: "ready",
  rows: 240,
  tokens: {
    prompt: { p50: 104, p95: 115, max: 120, mean: 104.6 },
    answer: { p50: 25, p95: 25, max: 25, mean: 24.5 },
    total: { p50: 128, p95: 140, max: 145, mean: 129.1 },
    sum: 30983,
  },
  overMaxLength: 112,
  roles: { system: 240, user: 240, assistant: 240, tool: 0 },
  turns: { 1: 240 },
  duplicates: {
    rows: 33,
    groups: 28,
    first: [
      { row: 14, duplicateOf: 6 },
      { row: 39, duplicateOf: 31 },
      { row: 43, duplicateOf: 19 },
      { row: 64, duplicateOf: 19 },
    ],
  },
  longest: [],
  suggestedMaxLength: { maxLength: 192, rowsOver: 0, cappedAtContext: false },
  histogram: [],
  computedAt: "2026-01-01T00:00:00Z",
};

test("a ready profile: rows, duplicates, token lengths, roles and turns, maxLength and the suggestion", () => {
  assert.deepEqual(formatDatasetProfile(ready), [
    "dataset profile (svc/pico-llama): 240 rows, 33 exact duplicates (row 14 repeats row 6, row 39 repeats row 31, row 43 repeats row 19, ...)",
    "  tokens per row: prompt p50 104 / p95 115 / max 120, answer p50 25 / p95 25 / max 25, total p50 128 / p95 140 / max 145",
    "  messages: 240 system, 240 user, 240 assistant; 240 rows with 1 assistant turn",
    "  maxLength 128: 112 rows over it (cut on the prompt side, dropped if the answer cannot fit); suggested maxLength 192 (holds 95% of rows in full and every answer)",
  ]);
});

test("no duplicates, mixed turns, no row over maxLength, a suggestion capped by the context", () => {
  const lines = formatDatasetProfile({
    ...ready,
    rows: 1,
    overMaxLength: 0,
    duplicates: { rows: 0, groups: 0, first: [] },
    turns: { 2: 50, 1: 950, 10: 1 },
    roles: { system: 0, user: 1, assistant: 1, tool: 2 },
    suggestedMaxLength: { maxLength: 2048, rowsOver: 3, cappedAtContext: true },
  });
  assert.equal(lines[0], "dataset profile (svc/pico-llama): 1 row, no duplicates");
  assert.equal(
    lines[2],
    "  messages: 1 user, 1 assistant, 2 tool; assistant turns per row: 1 (950 rows), 2 (50 rows), 10 (1 row)",
  );
  assert.equal(
    lines[3],
    "  maxLength 128: no row over it; suggested maxLength 2048, the model's context (3 rows longer)",
  );
});

test("pending and failed profiles say so in one line", () => {
  const base = { datasetId: "d", baseModel: "m", maxLength: 512 };
  assert.deepEqual(formatDatasetProfile({ ...base, status: "pending", progress: 0.42 }), [
    "dataset profile: still computing (42%); Studio's job page shows it when ready",
  ]);
  assert.deepEqual(formatDatasetProfile({ ...base, status: "failed", error: "row 3: bad template" }), [
    "dataset profile: failed: row 3: bad template",
  ]);
});
