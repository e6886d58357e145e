import assert from "node:assert/strict";
import { test } from "node:test";
import { crashFailure, crashVerdict } from "./crash-policy.js";

const policy = { crashRestarts: 3, restartWithoutCheckpoint: true };

test("a crash restarts the job while the crashes in a row stay within the limit, with or without a checkpoint", () => {
  for (const hasCheckpoint of [true, false])
    for (const streak of [1, 2, 3])
      assert.equal(crashVerdict(policy, { streak, hasCheckpoint, trainingStarted: true }), null);
  assert.equal(
    crashVerdict(policy, { streak: 4, hasCheckpoint: false, trainingStarted: true }),
    "it crashed 4 times in a row without a new checkpoint (--job-crash-restarts 3)",
  );
});

test("--job-crash-restarts 0 fails the job at its first crash", () => {
  assert.equal(
    crashVerdict({ ...policy, crashRestarts: 0 }, { streak: 1, hasCheckpoint: true, trainingStarted: true }),
    "restarts after a crash are off (--job-crash-restarts 0)",
  );
});

test("--no-restart-from-scratch fails a job with no checkpoint, unless it crashed before training began", () => {
  const off = { ...policy, restartWithoutCheckpoint: false };
  assert.match(
    crashVerdict(off, { streak: 1, hasCheckpoint: false, trainingStarted: true }) ?? "",
    /no checkpoint to resume from, and restarts from step 0 are off \(--no-restart-from-scratch\)/,
  );
  assert.equal(crashVerdict(off, { streak: 1, hasCheckpoint: true, trainingStarted: true }), null);
  // Downloading its base model, the job had no steps to lose.
  assert.equal(crashVerdict(off, { streak: 1, hasCheckpoint: false, trainingStarted: false }), null);
});

test("the failure names the last cause, why it is not restarted and the attempts", () => {
  assert.equal(
    crashFailure("the training process was killed by SIGKILL after step 7", "it crashed 4 times", 4),
    "the training process was killed by SIGKILL after step 7; it crashed 4 times; failed after 4 attempts",
  );
  assert.match(crashFailure("x", "y", 1), /failed after 1 attempt$/);
});
