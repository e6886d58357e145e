import assert from "node:assert/strict";
import { test } from "node:test";
import { addLogFrame, dropStepsAfter, emptySeries, seriesToCsv } from "./loss-series.js";

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
  assert.equal(seriesToCsv(series), "step,loss,evalLoss\n1,3,\n2,2.5,2.7\n3,2.25,\n4,2.15,2.45\n");
  assert.deepEqual(
    series.train.map((p) => p.step),
    [1, 2, 3, 4],
  );
});

test("a resume with nothing past its step leaves the series as it is", () => {
  const series = frames(emptySeries(), { step: 1, loss: 3 }, { step: 2, loss: 2 });
  assert.equal(dropStepsAfter(series, 2), series);
});
