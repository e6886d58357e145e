import assert from "node:assert/strict";
import { test } from "node:test";
import { addLogFrame, dropStepsAfter, emptySeries } from "./loss-series.js";
import { formatReward, hasPreferenceRewards, nearestRewards, rewardsExtent } from "./preference-rewards.js";

const figures = (chosenReward: number, rejectedReward: number) => ({
  chosenReward,
  rejectedReward,
  margin: chosenReward - rejectedReward,
  accuracy: chosenReward > rejectedReward ? 1 : 0,
});

test("a DPO job's rewards: chosen, rejected and margin, train each step and eval at each eval, dropped on a resume", () => {
  let series = [
    { step: 1, loss: 0.69, rewards: figures(0, 0), evalRewards: { ...figures(0, 0), loss: 0.69 } },
    { step: 2, loss: 0.6, rewards: figures(0.2, -0.1), evalRewards: null },
    { step: 3, loss: 0.5, rewards: figures(0.3, -0.4), evalRewards: { ...figures(0.1, -0.5), loss: 0.55 } },
  ].reduce((s, log) => addLogFrame(s, log), emptySeries());
  assert.deepEqual(
    series.margin.map((p) => [p.step, Number(p.value.toFixed(6))]),
    [
      [1, 0],
      [2, 0.3],
      [3, 0.7],
    ],
  );
  assert.deepEqual(
    series.rejectedReward.map((p) => p.value),
    [0, -0.1, -0.4],
  );
  assert.deepEqual(
    series.evalChosenReward.map((p) => p.step),
    [1, 3],
  );
  assert.equal(hasPreferenceRewards(series), true);
  assert.equal(hasPreferenceRewards(addLogFrame(emptySeries(), { step: 1, loss: 2 })), false);
  // y holds every reward and 0, padded by 5% of the span
  const y = rewardsExtent(series);
  assert.ok(
    Math.abs(y.min - (-0.5 - 0.06)) < 1e-9 && Math.abs(y.max - (0.7 + 0.06)) < 1e-9,
    JSON.stringify(y),
  );
  assert.deepEqual(rewardsExtent(addLogFrame(emptySeries(), { step: 1, rewards: figures(0, 0) })), {
    min: -1,
    max: 1,
  });
  const at2 = nearestRewards(series, 2.2);
  assert.equal(at2?.step, 2);
  assert.equal(at2?.chosenReward, 0.2);
  assert.equal(at2?.evalMargin, null, "no eval at step 2");
  assert.equal(nearestRewards(series, 3)?.evalRejectedReward, -0.5);
  series = dropStepsAfter(series, 1);
  assert.deepEqual(
    [series.chosenReward.length, series.evalMargin.length, series.trainPreferenceAccuracy.length],
    [1, 1, 1],
  );
  assert.equal(formatReward(0.12345), "+0.123");
  assert.equal(formatReward(-0.5), "-0.500");
  assert.equal(formatReward(0), "0.000");
});
