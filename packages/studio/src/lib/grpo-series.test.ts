import assert from "node:assert/strict";
import { test } from "node:test";
import {
  addGrpoFrame,
  clipCompletion,
  dropGrpoStepsAfter,
  type GrpoStep,
  grpoHealthSeries,
  grpoRewardExtent,
  grpoRewardSeries,
  grpoStepOf,
} from "./grpo-series.js";

const log = (step: number, reward: number, kl: number | null) => ({
  step,
  loss: 0.1,
  grpo: {
    reward,
    rewardStd: 0.2,
    rewards: { exact: reward, length: 1 - reward },
    kl,
    completionLength: 10 + step,
    zeroAdvantageFraction: 0.5,
    clipFraction: 0,
    samples: [
      { rowNumber: 3, completion: `answer ${step}`, rewards: { exact: reward }, reward, advantage: 0.1 },
    ],
  },
});

test("GRPO steps: one per logged step, a repeated step replaces the old, a resume drops later steps", () => {
  let steps = [log(1, 0.2, 0), log(2, 0.4, 0.01), log(3, 0.6, 0.02)].reduce<GrpoStep[]>(addGrpoFrame, []);
  assert.deepEqual(
    steps.map((s) => s.step),
    [1, 2, 3],
  );
  const series = grpoRewardSeries(steps);
  assert.deepEqual(
    series.reward.map((p) => p.value),
    [0.2, 0.4, 0.6],
  );
  assert.deepEqual(series.band[0], { step: 1, low: 0.2 - 0.2, high: 0.2 + 0.2 });
  assert.deepEqual(
    series.perReward.map((r) => [r.name, r.points.length]),
    [
      ["exact", 3],
      ["length", 3],
    ],
  );
  const health = grpoHealthSeries(steps);
  assert.deepEqual(
    health.completionLength.map((p) => p.value),
    [11, 12, 13],
  );
  assert.equal(health.kl.length, 3);
  assert.equal(steps[2].samples[0].completion, "answer 3");
  steps = dropGrpoStepsAfter(steps, 1);
  assert.deepEqual(
    steps.map((s) => s.step),
    [1],
  );
  steps = addGrpoFrame(steps, log(2, 0.9, 0.05));
  assert.equal(steps[1].reward, 0.9);
  steps = addGrpoFrame(steps, log(2, 0.8, 0.05));
  assert.equal(steps.length, 2);
  assert.equal(steps[1].reward, 0.8);
});

test("KL is absent (no points) when beta is 0; a frame without grpo adds nothing", () => {
  const steps = [log(1, 0.2, null), log(2, 0.3, null)].reduce<GrpoStep[]>(addGrpoFrame, []);
  assert.equal(grpoHealthSeries(steps).kl.length, 0);
  assert.equal(grpoStepOf({ step: 1, loss: 0.5 }), null);
  assert.equal(grpoStepOf({ step: 1, grpo: { reward: "x" } }), null);
  assert.equal(addGrpoFrame(steps, { step: 3, loss: 0.5 }), steps);
});

test("the reward chart's y range holds the ±std band and every reward, widened when flat", () => {
  const steps = [log(1, 0.5, 0)].reduce<GrpoStep[]>(addGrpoFrame, []);
  const { min, max } = grpoRewardExtent(grpoRewardSeries(steps));
  assert.ok(min <= 0.3 && max >= 0.7, `${min}..${max}`);
});

test("a long completion is clipped by characters, a short one kept", () => {
  assert.deepEqual(clipCompletion("short", 10), { text: "short", clipped: false });
  const long = clipCompletion("é".repeat(20), 10);
  assert.equal(long.clipped, true);
  assert.equal(long.text, `${"é".repeat(10)}…`);
});

test("GRPO eval reward: a point where an eval ran (training.log's evalGrpo), none elsewhere, inside the y range", () => {
  const withEval = (step: number, reward: number, evalReward: number | null) => ({
    ...log(step, reward, null),
    ...(evalReward === null ? {} : { evalGrpo: { reward: evalReward, rewards: { exact: evalReward } } }),
  });
  const steps = [
    withEval(1, 0.2, null),
    withEval(2, 0.4, 0.9),
    withEval(3, 0.5, null),
    withEval(4, 0.6, 1.5),
  ].reduce<GrpoStep[]>(addGrpoFrame, []);
  assert.deepEqual(
    steps.map((s) => s.evalReward),
    [null, 0.9, null, 1.5],
  );
  const series = grpoRewardSeries(steps);
  assert.deepEqual(series.evalReward, [
    { step: 2, value: 0.9 },
    { step: 4, value: 1.5 },
  ]);
  const { max } = grpoRewardExtent(series);
  assert.ok(max >= 1.5, String(max));
  assert.deepEqual(grpoRewardSeries([...steps].slice(0, 1)).evalReward, []);
});
