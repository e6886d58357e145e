import assert from "node:assert/strict";
import { test } from "node:test";
import { addLogFrame, dropStepsAfter, emptySeries, extent, hasPoints, seriesToCsv } from "./loss-series.js";
import { formatPercent, hasTaskMetrics, metricsStepExtent, nearestTaskMetrics } from "./task-metrics.js";

const frames = (series = emptySeries(), ...logs: Record<string, unknown>[]) =>
  logs.reduce((s, payload) => addLogFrame(s, payload), series);

test("a resume replaces the steps after its checkpoint: the CSV has each step once", () => {
  let series = frames(
    emptySeries(),
    { step: 1, loss: 3 },
    { step: 2, loss: 2.5, evalLoss: 2.7 },
    { step: 3, loss: 2.2 },
    { step: 4, loss: 2.1, evalLoss: 2.4 },
  );
  series = dropStepsAfter(series, 2); // training.started { resumedFromStep: 2 }
  series = frames(series, { step: 3, loss: 2.25 }, { step: 4, loss: 2.15, evalLoss: 2.45 });
  assert.equal(
    seriesToCsv(series),
    "step,loss,evalLoss,evalTokenAccuracy,evalExactMatch\n1,3,,,\n2,2.5,2.7,,\n3,2.25,,,\n4,2.15,2.45,,\n",
  );
  assert.deepEqual(
    series.train.map((p) => p.step),
    [1, 2, 3, 4],
  );
});

test("a resume with nothing past its step leaves the series as it is", () => {
  const series = frames(emptySeries(), { step: 1, loss: 3 }, { step: 2, loss: 2 });
  assert.equal(dropStepsAfter(series, 2), series);
});

test("the task metrics: their own series, in the CSV by field name, dropped on a resume like the losses", () => {
  let series = frames(
    emptySeries(),
    { step: 1, loss: 3, evalLoss: null, evalTokenAccuracy: null, evalExactMatch: null },
    { step: 2, loss: 2.5, evalLoss: 2.7, evalTokenAccuracy: 0.25, evalExactMatch: null },
    { step: 4, loss: 2.1, evalLoss: 2.4, evalTokenAccuracy: 0.5, evalExactMatch: 0.125 },
    // an event recorded before the fields existed
    { step: 5, loss: 2 },
  );
  assert.deepEqual(series.tokenAccuracy, [
    { step: 2, value: 0.25 },
    { step: 4, value: 0.5 },
  ]);
  assert.deepEqual(series.exactMatch, [{ step: 4, value: 0.125 }]);
  assert.equal(
    seriesToCsv(series),
    "step,loss,evalLoss,evalTokenAccuracy,evalExactMatch\n1,3,,,\n2,2.5,2.7,0.25,\n4,2.1,2.4,0.5,0.125\n5,2,,,\n",
  );
  series = dropStepsAfter(series, 2);
  assert.deepEqual(series.exactMatch, []);
  assert.deepEqual(series.tokenAccuracy, [{ step: 2, value: 0.25 }]);
  // the loss chart's data is what it was: its extent and placeholder read the losses only
  assert.deepEqual(extent(series, "value"), { min: 2.5, max: 3 });
  assert.equal(
    hasPoints(frames(emptySeries(), { step: 1, loss: null, evalLoss: null, evalTokenAccuracy: 0.5 })),
    false,
  );
});

test("task metrics hover and formatting", () => {
  const series = frames(
    emptySeries(),
    { step: 1, loss: 3 },
    { step: 10, loss: 2, evalLoss: 2.2, evalTokenAccuracy: 0.8125, evalExactMatch: 0.5 },
    { step: 20, loss: 1.5, evalLoss: 2.1, evalTokenAccuracy: 0.875, evalExactMatch: null },
  );
  assert.equal(hasTaskMetrics(series), true);
  assert.equal(hasTaskMetrics(emptySeries()), false);
  assert.deepEqual(nearestTaskMetrics(series, 2), {
    step: 10,
    tokenAccuracy: 0.8125,
    exactMatch: 0.5,
    preferenceAccuracy: null,
    trainPreferenceAccuracy: null,
  });
  assert.deepEqual(nearestTaskMetrics(series, 18), {
    step: 20,
    tokenAccuracy: 0.875,
    exactMatch: null,
    preferenceAccuracy: null,
    trainPreferenceAccuracy: null,
  });
  assert.deepEqual(metricsStepExtent(series), { min: 1, max: 20 }, "the loss chart's step range");
  assert.equal(formatPercent(0.8125), "81.3%");
  assert.equal(formatPercent(1), "100.0%");
});

test("a DPO job's preference accuracy (training and held out) is a task metric series and a CSV column only when present", () => {
  const rewards = (accuracy: number) => ({ chosenReward: 0, rejectedReward: 0, margin: 0, accuracy });
  const series = frames(
    emptySeries(),
    {
      step: 1,
      loss: 0.69,
      evalLoss: 0.7,
      rewards: rewards(0.5),
      evalRewards: { ...rewards(0.5625), loss: 0.7 },
    },
    { step: 2, loss: 0.6, rewards: rewards(1), evalRewards: null },
    { step: 3, loss: 0.5, evalLoss: 0.4, evalRewards: { ...rewards(0.9375), loss: 0.4 } },
  );
  assert.deepEqual(series.preferenceAccuracy, [
    { step: 1, value: 0.5625 },
    { step: 3, value: 0.9375 },
  ]);
  assert.equal(hasTaskMetrics(series), true);
  assert.deepEqual(series.trainPreferenceAccuracy, [
    { step: 1, value: 0.5 },
    { step: 2, value: 1 },
  ]);
  assert.deepEqual(nearestTaskMetrics(series, 3), {
    step: 3,
    tokenAccuracy: null,
    exactMatch: null,
    preferenceAccuracy: 0.9375,
    trainPreferenceAccuracy: null,
  });
  assert.equal(
    seriesToCsv(series),
    "step,loss,evalLoss,evalTokenAccuracy,evalExactMatch,evalRewards.accuracy,rewards.accuracy,rewards.chosenReward,rewards.rejectedReward,rewards.margin,evalRewards.chosenReward,evalRewards.rejectedReward,evalRewards.margin\n" +
      "1,0.69,0.7,,,0.5625,0.5,0,0,0,0,0,0\n2,0.6,,,,,1,0,0,0,,,\n3,0.5,0.4,,,0.9375,,,,,0,0,0\n",
  );
  assert.match(
    seriesToCsv(frames(emptySeries(), { step: 1, loss: 1 })),
    /^step,loss,evalLoss,evalTokenAccuracy,evalExactMatch\n/,
  );
});
