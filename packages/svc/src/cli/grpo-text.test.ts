import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobEvent } from "@svc/wire";
import { pausedReasonText } from "./grpo-text.js";
import { formatEventLine } from "./progress.js";

const base = { jobId: "j1", timestamp: "2026-01-01T00:00:00Z" };

test("a GRPO step's line adds the mean reward and each reward's mean under its name", () => {
  const grpo = {
    reward: 0.75,
    rewardStd: 0.1,
    rewards: { says_color: 0.25, length: -3 },
    kl: null,
    completionLength: 4,
    zeroAdvantageFraction: 0,
    clipFraction: 0,
    samples: [],
  };
  const log = {
    ...base,
    type: "training.log",
    step: 3,
    loss: 0.5,
    evalLoss: null,
    learningRate: 1e-3,
    epoch: 1,
    tokensPerSecond: 10,
    grpo,
  } as unknown as JobEvent;
  assert.equal(
    formatEventLine(log, 20),
    "step 3/20 loss=0.5000 reward=0.7500 says_color=0.2500 length=-3.0000",
  );
  // an eval step adds the eval set's mean reward
  const evalGrpo = { reward: 0.625, rewards: { says_color: 0.5 }, completionLength: 3 };
  assert.equal(
    formatEventLine({ ...log, evalGrpo } as JobEvent, 20),
    "step 3/20 loss=0.5000 reward=0.7500 says_color=0.2500 length=-3.0000 evalReward=0.6250",
  );
});

test("a job paused for its scorer says so and what resumes it; a user's pause reads as before", () => {
  assert.equal(
    formatEventLine({ ...base, type: "training.paused", step: 2, reason: "scorer_gone" }, 4),
    "paused at step 2: its trainer's scorer is gone (svc start --attach j1 resumes it)",
  );
  assert.equal(
    formatEventLine({ ...base, type: "training.paused", step: 2 }, 4),
    "paused at step 2 (POST /v1/jobs/:id/resume resumes it)",
  );
  assert.equal(pausedReasonText("something else", "j1"), "something else");
});
