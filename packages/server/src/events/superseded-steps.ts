// A job resumed from its checkpoint at step N (after a crash, kill -9 or a
// restart) trains steps N+1… again, so its event log holds the first run's
// training.log frames past N and then the resumed run's. The resumed run's
// training.started carries `resumedFromStep: N`; the frames before it with a
// step past N are superseded. History replayed to a reader leaves them out,
// so charts, statistics and exports count each step once; a reader that
// received them live drops them when the resumed run's training.started comes.
import type { StoredJobEvent } from "../store/job-store.js";

/** The events without the training.log frames a later resume superseded. */
export function dropSupersededSteps(events: StoredJobEvent[]): StoredJobEvent[] {
  // Walk backwards: the lowest resume step seen so far supersedes every earlier frame past it.
  let resumedFrom = Number.POSITIVE_INFINITY;
  const kept: StoredJobEvent[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event.type === "training.started") {
      const step = (JSON.parse(event.data) as { resumedFromStep?: unknown }).resumedFromStep;
      if (typeof step === "number") resumedFrom = Math.min(resumedFrom, step);
    } else if (event.type === "training.log" && resumedFrom !== Number.POSITIVE_INFINITY) {
      const step = (JSON.parse(event.data) as { step?: unknown }).step;
      if (typeof step === "number" && step > resumedFrom) continue;
    }
    kept.push(event);
  }
  return kept.reverse();
}
