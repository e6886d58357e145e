// The split files of the Hub's automatic layouts, and the errors that list what a repository has instead.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../http/api-error.js";
import { canonicalSplit, selectSplitFiles, splitOfFile } from "./hub-dataset-layout.js";

const label = "org/ds";
const select = (paths: string[], split: string, config?: string) =>
  selectSplitFiles(paths, { split, config, label }).files;

function refused(fn: () => unknown, code: string, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 400);
    assert.equal(error.code, code);
    assert.match(error.message, pattern);
    return true;
  });
}

test("a file's split: push_to_hub shards, the Parquet conversion's folders, keywords between separators", () => {
  assert.equal(splitOfFile("data/train-00000-of-00002.parquet"), "train");
  assert.equal(splitOfFile("data/test_sft-00000-of-00001.parquet"), "test_sft");
  assert.equal(splitOfFile("train/0000.parquet"), "train");
  assert.equal(splitOfFile("partial/valid/0001.parquet"), "validation");
  assert.equal(splitOfFile("train.jsonl"), "train");
  assert.equal(splitOfFile("dev.jsonl"), "validation");
  assert.equal(splitOfFile("my_eval_set.jsonl"), "test");
  assert.equal(splitOfFile("training/part1.jsonl"), "train");
  assert.equal(splitOfFile("trainer_notes.jsonl"), null);
  assert.equal(splitOfFile("contest.jsonl"), null);
  assert.equal(canonicalSplit("VALID"), "validation");
});

test("push_to_hub's layout: the split's shards in natural order, other splits and non-data files left out", () => {
  const paths = [
    "README.md",
    ".gitattributes",
    "data/train-00010-of-00011.parquet",
    "data/train-00002-of-00011.parquet",
    "data/test-00000-of-00001.parquet",
  ];
  assert.deepEqual(select(paths, "train"), [
    "data/train-00002-of-00011.parquet",
    "data/train-00010-of-00011.parquet",
  ]);
  assert.deepEqual(select(paths, "test"), ["data/test-00000-of-00001.parquet"]);
});

test("files with no split in their names are all the train split", () => {
  assert.deepEqual(select(["rows.jsonl", "more/rows2.jsonl"], "train"), ["more/rows2.jsonl", "rows.jsonl"]);
  refused(
    () => select(["rows.jsonl"], "test"),
    "hub_dataset_split_not_found",
    /no split "test"; splits found: "train"/,
  );
});

test("configs are top-level folders; several need one named, a missing one lists them", () => {
  const paths = ["en/train/0000.parquet", "en/test/0000.parquet", "fr/train/0000.parquet"];
  assert.deepEqual(select(paths, "train", "fr"), ["fr/train/0000.parquet"]);
  refused(() => select(paths, "train"), "hub_dataset_config_required", /several configs \("en", "fr"\)/);
  refused(
    () => select(paths, "train", "de"),
    "hub_dataset_config_not_found",
    /no config "de".*configs found: "en", "fr"/,
  );
  // The Hub's Parquet conversion of a single-config dataset: default/<split>/NNNN.parquet.
  assert.deepEqual(select(["default/train/0000.parquet", "default/train/0001.parquet"], "train"), [
    "default/train/0000.parquet",
    "default/train/0001.parquet",
  ]);
  assert.deepEqual(select(["data/train.jsonl"], "train", "default"), ["data/train.jsonl"]);
  // JSON files are data too, but not save_to_disk's metadata beside them.
  assert.deepEqual(select(["alpaca_data.json", "dataset_info.json", "state.json"], "train"), [
    "alpaca_data.json",
  ]);
  // Configs as folders under data/ (data/<config>/<split>-NNNNN-of-NNNNN.parquet).
  const nested = [
    "data/all/train-00000-of-00001.parquet",
    "data/small/train-00000-of-00001.parquet",
    "data/small/test-00000-of-00001.parquet",
  ];
  refused(() => select(nested, "train"), "hub_dataset_config_required", /several configs \("all", "small"\)/);
  assert.deepEqual(select(nested, "train", "small"), ["data/small/train-00000-of-00001.parquet"]);
  assert.deepEqual(selectSplitFiles(nested, { split: "test", config: "small", label }).config, "small");
});

test("an unknown split lists the splits and files there are; a repository without data files says so", () => {
  refused(
    () => select(["data/train-00000-of-00001.parquet", "data/validation-00000-of-00001.parquet"], "tset"),
    "hub_dataset_split_not_found",
    /org\/ds: no split "tset"; splits found: "train", "validation" \(files: "data\/train-00000-of-00001.parquet"/,
  );
  refused(
    () => select(["README.md", "data.csv"], "train"),
    "hub_dataset_no_data",
    /no data files \(svc reads \.parquet, \.jsonl and \.json files; its files: "README.md", "data.csv"\)/,
  );
});
