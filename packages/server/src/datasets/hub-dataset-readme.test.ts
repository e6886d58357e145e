// README.md `configs:` as push_to_hub and the Hub's manual configuration write them, and the split files they select.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../http/api-error.js";
import { selectSplitFiles } from "./hub-dataset-layout.js";
import { globRegex, ReadmeConfigError, readmeConfigs } from "./hub-dataset-readme.js";

const PUSH_TO_HUB = `---
dataset_info:
  features:
  - name: messages
    list:
    - name: content
      dtype: string
  splits:
  - name: train
    num_examples: 10
configs:
- config_name: default
  data_files:
  - split: train_sft
    path: data/train_sft-*
  - split: test_sft
    path: "data/test_sft-*"
- config_name: extra
  data_dir: more
  data_files:
    train: ["a.jsonl", 'b.jsonl']
license: mit
---

# A dataset
`;

test("the configs section: split entries, data_dir, a map of splits; the rest of the front matter is not read", () => {
  assert.deepEqual(readmeConfigs(PUSH_TO_HUB), [
    {
      name: "default",
      default: false,
      dataDir: "",
      splits: [
        { split: "train_sft", patterns: ["data/train_sft-*"] },
        { split: "test_sft", patterns: ["data/test_sft-*"] },
      ],
    },
    {
      name: "extra",
      default: false,
      dataDir: "more",
      splits: [{ split: "train", patterns: ["a.jsonl", "b.jsonl"] }],
    },
  ]);
  assert.deepEqual(
    readmeConfigs("---\nconfigs:\n- config_name: main\n  data_files: main.jsonl\n  default: true\n---\n"),
    [{ name: "main", default: true, dataDir: "", splits: [{ split: "train", patterns: ["main.jsonl"] }] }],
  );
  assert.equal(readmeConfigs("# no front matter\nconfigs:\n"), null);
  assert.equal(readmeConfigs("---\nlicense: mit\n---\n"), null);
});

test("what the section cannot say clearly is refused naming the line", () => {
  assert.throws(
    () => readmeConfigs("---\nconfigs:\n- config_name: a\n  data_files: *anchor\n---\n"),
    (e: Error) =>
      e instanceof ReadmeConfigError && /line 4: "\*anchor" is YAML svc does not read here/.test(e.message),
  );
  assert.throws(
    () => readmeConfigs("---\nconfigs:\n- data_files: x.jsonl\n---\n"),
    /every entry needs a config_name/,
  );
  assert.throws(
    () => readmeConfigs("---\nconfigs:\n- config_name: a\n  data_files:\n  - split: train\n---\n"),
    /split "train" path must be a file pattern/,
  );
});

test("globs: * within a folder, ** across folders", () => {
  assert.ok(globRegex("data/train-*").test("data/train-00000-of-00001.parquet"));
  assert.ok(!globRegex("data/train-*").test("data/x/train-0.parquet"));
  assert.ok(globRegex("**/*.jsonl").test("a/b/c.jsonl"));
  assert.ok(globRegex("**/*.jsonl").test("c.jsonl"));
  assert.ok(!globRegex("data.jsonl").test("dataxjsonl"));
});

test("the README decides the split's files; a split or config it does not declare is refused listing what it does", () => {
  const configs = readmeConfigs(PUSH_TO_HUB);
  const paths = [
    "README.md",
    "data/train_sft-00000-of-00001.parquet",
    "data/test_sft-00000-of-00001.parquet",
    "more/a.jsonl",
    "more/b.jsonl",
  ];
  const select = (split: string, config?: string) =>
    selectSplitFiles(paths, { split, config, label: "org/ds" }, configs);
  assert.deepEqual(select("train_sft").files, ["data/train_sft-00000-of-00001.parquet"]);
  assert.deepEqual(select("train", "extra"), {
    files: ["more/a.jsonl", "more/b.jsonl"],
    config: "extra",
    splits: ["train"],
  });
  assert.throws(
    () => select("train"),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === "hub_dataset_split_not_found" &&
      /no split "train" in config "default" of its README.md; splits: "train_sft", "test_sft"/.test(
        e.message,
      ),
  );
  assert.throws(
    () => select("train", "nope"),
    /no config "nope" in its README.md; configs: "default", "extra"/,
  );
  const csv = readmeConfigs("---\nconfigs:\n- config_name: default\n  data_files: data/*.csv\n---\n");
  assert.throws(
    () => selectSplitFiles(["data/x.csv"], { split: "train", label: "org/ds" }, csv),
    /holds files svc does not read \("data\/x.csv"\)/,
  );
});
