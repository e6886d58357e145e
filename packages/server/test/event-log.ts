// A job's event log as the event-stream load tests write it straight to the
// store (event-streams.test.ts, event-streams-cluster.test.ts): training.log
// frames the size of a real run's, a completed job with a long history, and
// the check that a reader got every event in order, once.
import assert from "node:assert/strict";
import type { NewJobEvent } from "../src/store/job-store.js";
import type { Store } from "../src/store/store.js";
import { TINY_MODEL } from "./harness.js";

/** A training.log frame as the engine reports one, about 330 bytes on the wire like a real one. */
export const logEvent = (step: number) =>
  ({
    type: "training.log",
    step,
    loss: 2.345678 - step * 1e-5,
    evalLoss: null,
    evalTokenAccuracy: null,
    evalExactMatch: null,
    learningRate: 0.00019876,
    epoch: step / 1000,
    tokensPerSecond: 5210.5,
  }) as NewJobEvent;

export const started = (resumedFromStep?: number) =>
  ({
    type: "training.started",
    baseModel: TINY_MODEL,
    totalSteps: 100_000,
    trainExamples: 16,
    evalExamples: 0,
    ...(resumedFromStep === undefined ? {} : { resumedFromStep }),
  }) as NewJobEvent;

/** Appends in batches of 1,000 (one transaction each). */
export async function appendEvents(store: Store, jobId: string, events: NewJobEvent[]): Promise<void> {
  for (let at = 0; at < events.length; at += 1000)
    await store.jobs.appendEvents(jobId, events.slice(at, at + 1000));
}

/** Makes a queued job a completed one with `total` events: started, total - 3 steps, completed, end. */
export async function seedCompletedJob(store: Store, jobId: string, total: number): Promise<void> {
  await appendEvents(store, jobId, [
    started(),
    ...Array.from({ length: total - 3 }, (_, i) => logEvent(i + 1)),
  ]);
  assert.ok(
    await store.jobs.transition(jobId, { status: ["queued"] }, { status: "completed" }, [
      { type: "training.completed", artifacts: [], metrics: { steps: 0, finalLoss: null, evalLoss: null } },
      { type: "end" },
    ] as NewJobEvent[]),
  );
}

export const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Expects exactly the ids `expected`, each once, in order, ending with `end`. */
export function assertWhole(got: { ids: number[]; events: string[] }, expected: number[], who: string): void {
  assert.equal(got.events.at(-1), "end", `${who} reached the end`);
  assert.equal(got.ids.length, expected.length, `${who} got ${expected.length} events`);
  got.ids.forEach((id, i) => {
    if (id !== expected[i]) assert.fail(`${who}: event ${i + 1} has id ${id}, not ${expected[i]}`);
  });
}
