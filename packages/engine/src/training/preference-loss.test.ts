import assert from "node:assert/strict";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import {
  logSigmoid,
  type PairLogProbs,
  PreferenceMeter,
  pairLoss,
  resolvePreference,
} from "./preference-loss.js";

const p: PairLogProbs = {
  policyChosen: -10,
  policyRejected: -14,
  referenceChosen: -11,
  referenceRejected: -12,
  chosenTokens: 4,
  rejectedTokens: 7,
};

test("defaults: sigmoid with β 0.1, no smoothing; simpo with β 2 and γ 0.5", () => {
  assert.deepEqual(resolvePreference({}), { loss: "sigmoid", beta: 0.1, labelSmoothing: 0, gamma: 0 });
  assert.deepEqual(resolvePreference({ loss: "simpo" }), {
    loss: "simpo",
    beta: 2,
    labelSmoothing: 0,
    gamma: 0.5,
  });
});

test("bad settings are refused naming the field", () => {
  const refused = (h: object, field: string) =>
    assert.throws(
      () => resolvePreference(h),
      (e: unknown) => isEngineError(e) && e.message.startsWith(`hyperparameters.${field} must be`),
    );
  refused({ beta: 0 }, "beta");
  refused({ beta: Number.NaN }, "beta");
  refused({ labelSmoothing: 0.51 }, "labelSmoothing");
  refused({ labelSmoothing: -0.1 }, "labelSmoothing");
  refused({ loss: "ipo" }, "loss");
  refused({ gamma: 1 }, "gamma"); // only with simpo
  refused({ loss: "simpo", gamma: -1 }, "gamma");
});

test("DPO: the paper's loss and rewards, and the derivatives match finite differences", () => {
  const s = resolvePreference({ beta: 0.5, labelSmoothing: 0.1 });
  const l = pairLoss(p, s);
  const h = -10 - -11 - (-14 - -12); // 3
  const want = -0.9 * logSigmoid(0.5 * h) - 0.1 * logSigmoid(-0.5 * h);
  assert.ok(Math.abs(l.loss - want) < 1e-12);
  assert.equal(l.chosenReward, 0.5);
  assert.equal(l.rejectedReward, -1);
  const eps = 1e-6;
  const dc = (pairLoss({ ...p, policyChosen: p.policyChosen + eps }, s).loss - l.loss) / eps;
  const dr = (pairLoss({ ...p, policyRejected: p.policyRejected + eps }, s).loss - l.loss) / eps;
  assert.ok(Math.abs(dc - l.dChosen) < 1e-6, `${dc} vs ${l.dChosen}`);
  assert.ok(Math.abs(dr - l.dRejected) < 1e-6, `${dr} vs ${l.dRejected}`);
  // no smoothing: d loss/d log πθ(yw) = −β·σ(−βh)
  const plain = pairLoss(p, resolvePreference({ beta: 0.5 }));
  assert.ok(Math.abs(plain.dChosen + 0.5 / (1 + Math.exp(1.5))) < 1e-12);
});

test("SimPO: length-normalised rewards, the margin γ, no reference", () => {
  const s = resolvePreference({ loss: "simpo", beta: 2, gamma: 0.5 });
  const l = pairLoss({ ...p, referenceChosen: 99, referenceRejected: -99 }, s);
  assert.equal(l.chosenReward, (2 / 4) * -10);
  assert.equal(l.rejectedReward, (2 / 7) * -14);
  assert.ok(Math.abs(l.loss + logSigmoid(-5 + 4 - 0.5)) < 1e-12);
  const eps = 1e-6;
  const dc = (pairLoss({ ...p, policyChosen: p.policyChosen + eps }, s).loss - l.loss) / eps;
  assert.ok(Math.abs(dc - l.dChosen) < 1e-6);
});

test("the loss stays finite for large margins", () => {
  const s = resolvePreference({ beta: 10 });
  for (const d of [-1000, 1000]) {
    const l = pairLoss({ ...p, policyChosen: p.policyChosen + d }, s);
    assert.ok(Number.isFinite(l.loss) && Number.isFinite(l.dChosen), `${d}: ${l.loss}`);
  }
});

test("the meter: means, margin, accuracy with ties as half", () => {
  const m = new PreferenceMeter();
  m.add({ loss: 1, chosenReward: 1, rejectedReward: 0, dChosen: 0, dRejected: 0 });
  m.add({ loss: 3, chosenReward: 0, rejectedReward: 1, dChosen: 0, dRejected: 0 });
  m.add({ loss: 2, chosenReward: 0, rejectedReward: 0, dChosen: 0, dRejected: 0 });
  assert.deepEqual(m.result(), {
    loss: 2,
    chosenReward: 1 / 3,
    rejectedReward: 1 / 3,
    margin: 0,
    accuracy: 0.5,
    pairs: 3,
  });
});
