import assert from "node:assert/strict";
import { test } from "node:test";
import { formatHubDatasetNotice } from "./hub-dataset-text.js";

const request = { name: "org/qa", split: "train", columns: { prompt: "question", completion: "answer" } };

test("svc start's lines for a Hub dataset: while the server reads it, and what it read", () => {
  assert.equal(
    formatHubDatasetNotice({ set: "train", request }),
    'dataset: org/qa split "train": reading it from the Hugging Face Hub (the server fetches it into its cache)…',
  );
  const dataset = { id: "d", projectId: "p", name: "org/qa:train", rows: 1200, bytes: 1, createdAt: "" };
  const source = {
    type: "huggingface" as const,
    name: "org/qa",
    split: "train",
    config: null,
    revision: "0123456789abcdef0123456789abcdef01234567",
    files: ["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"],
    shape: "prompt_completion" as const,
    columns: { prompt: "question", completion: "answer" },
    ignoredColumns: [],
    fromCache: true,
  };
  assert.equal(
    formatHubDatasetNotice({ set: "eval", request: { ...request, config: "en" }, dataset, source }),
    'eval dataset: org/qa config "en" split "train": 1,200 rows from 2 files at 0123456789ab (from the cache; columns prompt=question, completion=answer)',
  );
});
