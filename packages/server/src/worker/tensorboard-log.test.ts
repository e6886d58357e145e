import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readEventFile, scalarSeries } from "../../test/tfevents-reader.js";
import { DataDir } from "../data-dir.js";
import type { ArtifactsTable } from "../db/schema.js";
import type { NewJobEvent, StoredJobEvent } from "../store/job-store.js";
import type { Store } from "../store/store.js";
import { JobTensorBoardLog, SCALAR_TAGS, scalarHistory, scalarsOf } from "./tensorboard-log.js";

type Log = Extract<NewJobEvent, { type: "training.log" }>;

const log = (step: number, loss: number, extra: Partial<Record<string, number | null>> = {}): Log =>
  ({
    type: "training.log",
    step,
    loss,
    evalLoss: null,
    learningRate: 1e-3,
    epoch: step / 4,
    tokensPerSecond: 100 + step,
    ...extra,
  }) as Log;

const started = (resumedFromStep?: number): NewJobEvent => ({
  type: "training.started",
  baseModel: "test/tiny",
  totalSteps: 6,
  trainExamples: 8,
  evalExamples: 2,
  ...(resumedFromStep !== undefined ? { resumedFromStep } : {}),
});

/** A job's stored event log and artifact rows, enough of a Store for JobTensorBoardLog. */
function fakeStore() {
  const stored: StoredJobEvent[] = [];
  const artifacts: ArtifactsTable[] = [];
  const store = {
    jobs: {
      eventsAfter: async (_jobId: string, after: number) => stored.filter((e) => e.seq > after),
      addArtifact: async (row: ArtifactsTable) => {
        artifacts.push(row);
        return row;
      },
    },
  } as unknown as Store;
  const append = (events: NewJobEvent[]) => {
    for (const e of events)
      stored.push({
        seq: stored.length + 1,
        type: e.type,
        data: JSON.stringify({ ...e, jobId: "job-1", timestamp: new Date().toISOString() }),
      });
  };
  return { store, stored, artifacts, append };
}

const roots: string[] = [];
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

test("every numeric training.log field becomes a tagged scalar; null, absent and non-finite ones are left out", () => {
  const all = {
    step: 4,
    loss: 1.5,
    evalLoss: 1.75,
    learningRate: 2e-4,
    epoch: 0.5,
    tokensPerSecond: 900,
    evalTokenAccuracy: 0.625,
    evalExactMatch: 0.25,
  };
  assert.deepEqual(scalarsOf(all), [
    { tag: "train/loss", value: 1.5 },
    { tag: "train/learning_rate", value: 2e-4 },
    { tag: "train/tokens_per_second", value: 900 },
    { tag: "train/epoch", value: 0.5 },
    { tag: "eval/loss", value: 1.75 },
    { tag: "eval/token_accuracy", value: 0.625 },
    { tag: "eval/exact_match", value: 0.25 },
  ]);
  assert.equal(SCALAR_TAGS.length, 21);
  const grpo = {
    reward: 0.5,
    rewardStd: 0.25,
    rewards: { "says the": 0.5, format: 1 },
    kl: null,
    completionLength: 11.5,
    zeroAdvantageFraction: 0.25,
    clipFraction: 0,
    samples: [],
  };
  assert.deepEqual(
    scalarsOf({ step: 3, loss: 0.01, grpo }).map((s) => [s.tag, s.value]),
    [
      ["train/loss", 0.01],
      ["reward", 0.5],
      ["reward_std", 0.25],
      ["completions/mean_length", 11.5],
      ["frac_reward_zero_std", 0.25],
      ["clip_ratio/region_mean", 0],
      ["rewards/says the/mean", 0.5],
      ["rewards/format/mean", 1],
    ],
  );
  const rewards = { chosenReward: 0.5, rejectedReward: -0.25, margin: 0.75, accuracy: 1 };
  assert.deepEqual(
    scalarsOf({ step: 2, loss: 0.6, rewards, evalRewards: null }).map((s) => [s.tag, s.value]),
    [
      ["train/loss", 0.6],
      ["rewards/chosen", 0.5],
      ["rewards/rejected", -0.25],
      ["rewards/margins", 0.75],
      ["rewards/accuracies", 1],
    ],
  );
  assert.deepEqual(
    scalarsOf({ step: 2, evalRewards: { ...rewards, loss: 0.4 } }).map((s) => s.tag),
    ["eval/rewards/chosen", "eval/rewards/rejected", "eval/rewards/margins", "eval/rewards/accuracies"],
  );
  assert.deepEqual(
    scalarsOf({ step: 1, loss: null, evalLoss: 2, learningRate: Number.NaN, evalTokenAccuracy: null }).map(
      (s) => s.tag,
    ),
    ["eval/loss"],
  );
});

test("each run's start supersedes the records past its resume step; a run from the first step supersedes all", () => {
  const { stored, append } = fakeStore();
  append([started(), log(1, 5), log(2, 4), log(3, 3), log(4, 2)]);
  append([started(2), log(3, 30), log(4, 20), log(5, 10)]);
  assert.deepEqual(
    scalarHistory(stored).map((r) => [r.step, r.scalars[0].value]),
    [
      [1, 5],
      [2, 4],
      [3, 30],
      [4, 20],
      [5, 10],
    ],
  );
  append([started(), log(1, 500)]);
  assert.deepEqual(
    scalarHistory(stored).map((r) => [r.step, r.scalars[0].value]),
    [[1, 500]],
  );
});

test("the file follows the events: created at the first log, appended, rewritten when a resumed run starts", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-tb-"));
  roots.push(root);
  const dataDir = new DataDir(root);
  const { store, artifacts, append } = fakeStore();
  const tb = new JobTensorBoardLog(store, dataDir, "job-1");
  const feed = async (events: NewJobEvent[]) => {
    append(events);
    await tb.record(events);
  };
  const dir = join(root, "jobs", "job-1", "tensorboard");
  const read = () => {
    const names = readdirSync(dir);
    assert.equal(names.length, 1, names.join(", "));
    return readEventFile(readFileSync(join(dir, names[0])));
  };

  await feed([started()]);
  assert.equal(tb.artifactRow(), null, "no file before the first log");
  await feed([log(1, 4)]);
  await feed([log(2, 3, { evalLoss: 3.5, evalTokenAccuracy: 0.5, evalExactMatch: 0.125 })]);
  await feed([log(3, 2)]);
  let events = read();
  assert.equal(events[0].fileVersion, "brain.Event:2");
  assert.deepEqual(
    events.slice(1).map((e) => e.step),
    [1, 2, 3],
  );
  assert.deepEqual(events[2].scalars, [
    { tag: "train/loss", value: 3 },
    { tag: "train/learning_rate", value: Math.fround(1e-3) },
    { tag: "train/tokens_per_second", value: 102 },
    { tag: "train/epoch", value: 0.5 },
    { tag: "eval/loss", value: 3.5 },
    { tag: "eval/token_accuracy", value: 0.5 },
    { tag: "eval/exact_match", value: 0.125 },
  ]);
  const row = tb.artifactRow()!;
  assert.equal(row.name, "tensorboard");
  assert.equal(row.kind, "tensorboard");
  assert.equal(row.step, 3);
  assert.equal(row.dir, join("jobs", "job-1", "tensorboard"));
  const [file] = JSON.parse(row.files) as { path: string; bytes: number }[];
  assert.match(file.path, /^events\.out\.tfevents\.\d+\.[A-Za-z0-9._-]+$/);
  assert.equal(file.bytes, readFileSync(join(dir, file.path)).length);
  assert.equal(artifacts.length, 1, "listed as soon as the file exists");

  // A killed process left a torn record; the resumed run (from the checkpoint at step 1) rewrites the file.
  writeFileSync(join(dir, file.path), Buffer.from([1, 2, 3]), { flag: "a" });
  const resumed = new JobTensorBoardLog(store, dataDir, "job-1");
  append([started(1)]);
  await resumed.record([started(1)]);
  events = read();
  assert.deepEqual(
    events.slice(1).map((e) => e.step),
    [1],
  );
  append([log(2, 30)]);
  await resumed.record([log(2, 30)]);
  events = read();
  assert.deepEqual(scalarSeries(events).get("train/loss"), [
    [1, 4],
    [2, 30],
  ]);
  assert.equal(readdirSync(dir)[0], file.path, "the same file name across runs");
  assert.equal(resumed.artifactRow()!.step, 2);
});
