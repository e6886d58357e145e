import assert from "node:assert/strict";
import { test } from "node:test";
import type { StoredJobEvent } from "../store/job-store.js";
import { dropSupersededSteps } from "./superseded-steps.js";

let seq = 0;
const started = (resumedFromStep?: number): StoredJobEvent => ({
  seq: ++seq,
  type: "training.started",
  data: JSON.stringify({
    type: "training.started",
    ...(resumedFromStep === undefined ? {} : { resumedFromStep }),
  }),
});
const log = (step: number): StoredJobEvent => ({
  seq: ++seq,
  type: "training.log",
  data: JSON.stringify({ type: "training.log", step, loss: 1 }),
});
const checkpoint = (step: number): StoredJobEvent => ({
  seq: ++seq,
  type: "checkpoint.saved",
  data: JSON.stringify({ type: "checkpoint.saved", step }),
});
const steps = (events: StoredJobEvent[]) =>
  events.map((e) => (e.type === "training.log" ? JSON.parse(e.data).step : e.type));

test("frames past a later resume's step are left out; every other event stays, in order", () => {
  const events = [
    started(),
    log(1),
    log(2),
    checkpoint(2),
    log(3),
    log(4),
    started(2),
    log(3),
    log(4),
    log(5),
  ];
  assert.deepEqual(steps(dropSupersededSteps(events)), [
    "training.started",
    1,
    2,
    "checkpoint.saved",
    "training.started",
    3,
    4,
    5,
  ]);
});

test("two resumes: each supersedes the frames before it past its step", () => {
  const events = [started(), log(1), log(2), log(3), started(1), log(2), log(3), started(2), log(3)];
  assert.deepEqual(steps(dropSupersededSteps(events)), [
    "training.started",
    1,
    "training.started",
    2,
    "training.started",
    3,
  ]);
});

test("a log without resumes is returned as it is", () => {
  const events = [started(), log(1), log(2), checkpoint(2)];
  assert.deepEqual(dropSupersededSteps(events), events);
});
