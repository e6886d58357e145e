// A job resumed from its checkpoint at step N (after a crash, kill -9 or a
// restart) trains steps N+1… again, so its event log holds the first run's
// training.log frames past N and then the resumed run's. The resumed run's
// training.started carries `resumedFromStep: N`; the frames before it with a
// step past N are superseded. History replayed to a reader leaves them out,
// so charts, statistics and exports count each step once; a reader that
// received them live drops them when the resumed run's training.started comes.
//
// Replay reads history in pages, so it cannot walk the whole log backwards:
// it reads the job's resume markers (its few training.started events) first
// and asks them about each page (ResumeMarkers).
import type { StoredJobEvent } from "../store/job-store.js";

/** A resumed run's training.started: where it sits in the log and the step it resumed from. */
export interface ResumeMarker {
  seq: number;
  step: number;
}

/** The step a training.started resumed from, or null (a first run, or another event). */
export function resumeStepOf(event: StoredJobEvent): number | null {
  if (event.type !== "training.started") return null;
  const step = (JSON.parse(event.data) as { resumedFromStep?: unknown }).resumedFromStep;
  return typeof step === "number" ? step : null;
}

/** How the job runner writes a training.log payload: its type, then its step (read without parsing the rest). */
const LEADING_STEP = /^\{"type":"training\.log","step":(\d{1,15})[,}]/;

/** A training.log frame's step, or null (another event, or a frame without one). */
export function logStepOf(event: StoredJobEvent): number | null {
  if (event.type !== "training.log") return null;
  const leading = LEADING_STEP.exec(event.data);
  if (leading) return Number(leading[1]);
  const step = (JSON.parse(event.data) as { step?: unknown }).step;
  return typeof step === "number" ? step : null;
}

/** The resume markers of a log, asked which earlier training.log frames they supersede. */
export class ResumeMarkers {
  private readonly seqs: number[];
  /** lowest[i]: the lowest resume step among markers i, i+1, … */
  private readonly lowest: number[];

  constructor(markers: readonly ResumeMarker[]) {
    const sorted = [...markers].sort((a, b) => a.seq - b.seq);
    this.seqs = sorted.map((m) => m.seq);
    this.lowest = sorted.map((m) => m.step);
    for (let i = this.lowest.length - 2; i >= 0; i--)
      this.lowest[i] = Math.min(this.lowest[i], this.lowest[i + 1]);
  }

  static of(events: readonly StoredJobEvent[]): ResumeMarkers {
    const markers: ResumeMarker[] = [];
    for (const event of events) {
      const step = resumeStepOf(event);
      if (step !== null) markers.push({ seq: event.seq, step });
    }
    return new ResumeMarkers(markers);
  }

  get empty(): boolean {
    return this.seqs.length === 0;
  }

  /**
   * The lowest step a resume after event `seq` went back to (Infinity when no
   * resume follows it). Never decreases as `seq` grows.
   */
  resumeStepAfter(seq: number): number {
    let lo = 0;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.seqs[mid] > seq) hi = mid;
      else lo = mid + 1;
    }
    return lo < this.lowest.length ? this.lowest[lo] : Number.POSITIVE_INFINITY;
  }

  /** Whether a training.log frame at `seq` logging `step` was superseded by a later resume. */
  supersedes(seq: number, step: number | null): boolean {
    return step !== null && step > this.resumeStepAfter(seq);
  }
}

/** The events without the training.log frames a later resume superseded. */
export function dropSupersededSteps(events: StoredJobEvent[]): StoredJobEvent[] {
  const markers = ResumeMarkers.of(events);
  if (markers.empty) return events;
  return events.filter((event) => !markers.supersedes(event.seq, logStepOf(event)));
}
