// Pages of a job's event log, encoded once as SSE frames back to back, so
// every subscriber that needs a page gets the same bytes (a socket write each,
// no copy). Replays read history through EventPageCache: subscribers that
// replay the same job at once share each page's one database read, and the
// pages stay in memory up to a byte budget.
import type { StoredJobEvent } from "../store/job-store.js";
import { logStepOf, type ResumeMarkers } from "./superseded-steps.js";

export interface EventPage {
  /** Each event's seq, ascending. */
  seqs: number[];
  /** Each event's training.log step (null for other events). */
  steps: (number | null)[];
  /** Where each frame starts in `bytes`; one more entry, bytes.length, ends the last. */
  starts: number[];
  bytes: Uint8Array;
  /** Index of the `end` event, or -1. */
  endIndex: number;
  /** The highest training.log step in the page (-Infinity when none). */
  maxStep: number;
}

export function encodePage(events: readonly StoredJobEvent[]): EventPage {
  const frames = events.map((e) => `id: ${e.seq}\nevent: ${e.type}\ndata: ${e.data}\n\n`);
  const starts: number[] = [0];
  for (const f of frames) starts.push(starts[starts.length - 1] + Buffer.byteLength(f));
  // One encode for the whole page; a Buffer is a Uint8Array over its own memory.
  const bytes = Buffer.from(frames.join(""));
  const steps = events.map(logStepOf);
  return {
    seqs: events.map((e) => e.seq),
    steps,
    starts,
    bytes,
    endIndex: events.findIndex((e) => e.type === "end"),
    maxStep: steps.reduce<number>((m, s) => (s !== null && s > m ? s : m), Number.NEGATIVE_INFINITY),
  };
}

/** What a subscriber that has everything up to `after` gets from a page. */
export interface PageSlice {
  /** The frames to write (empty when the page holds nothing new). */
  bytes: Uint8Array;
  /** The seq to continue after (the page's last new event, sent or superseded). */
  through: number;
  /** True when the slice ends with the `end` event. */
  ended: boolean;
}

/**
 * The frames of `page` after seq `after`, up to `end`, leaving out the
 * training.log frames `markers` supersede (null: keep everything).
 */
export function sliceAfter(page: EventPage, after: number, markers: ResumeMarkers | null): PageSlice {
  let first = 0;
  while (first < page.seqs.length && page.seqs[first] <= after) first++;
  const stop = page.endIndex >= first ? page.endIndex + 1 : page.seqs.length;
  if (first >= stop) return { bytes: new Uint8Array(0), through: after, ended: false };
  const through = page.seqs[stop - 1];
  const ended = page.endIndex >= first;
  // The lowest resume step after an event only grows along the page: checking the first event bounds them all.
  if (!markers || markers.empty || page.maxStep <= markers.resumeStepAfter(page.seqs[first]))
    return { bytes: page.bytes.subarray(page.starts[first], page.starts[stop]), through, ended };
  const kept: number[] = [];
  let size = 0;
  for (let i = first; i < stop; i++) {
    if (markers.supersedes(page.seqs[i], page.steps[i])) continue;
    kept.push(i);
    size += page.starts[i + 1] - page.starts[i];
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const i of kept) {
    bytes.set(page.bytes.subarray(page.starts[i], page.starts[i + 1]), at);
    at += page.starts[i + 1] - page.starts[i];
  }
  return { bytes, through, ended };
}

type ReadPage = (jobId: string, afterSeq: number, limit: number) => Promise<StoredJobEvent[]>;

/**
 * Full pages (exactly `limit` events after a seq) never change once stored:
 * ids are appended in order and never rewritten. They are kept, least
 * recently used first out, within `maxBytes`; a short page (the log's current
 * end) is read each time. Identical reads in flight share one query.
 */
export class EventPageCache {
  private readonly pages = new Map<string, EventPage>();
  private readonly reading = new Map<string, Promise<EventPage>>();
  private bytes = 0;

  constructor(
    private readonly read: ReadPage,
    private readonly maxBytes: number,
  ) {}

  async page(jobId: string, afterSeq: number, limit: number): Promise<EventPage> {
    const key = `${jobId}:${afterSeq}:${limit}`;
    const cached = this.pages.get(key);
    if (cached) {
      this.pages.delete(key);
      this.pages.set(key, cached);
      return cached;
    }
    let pending = this.reading.get(key);
    if (!pending) {
      pending = this.read(jobId, afterSeq, limit).then((events) => {
        const page = encodePage(events);
        if (events.length === limit) this.keep(key, page);
        return page;
      });
      const done = () => this.reading.delete(key);
      pending.then(done, done);
      this.reading.set(key, pending);
    }
    return pending;
  }

  private keep(key: string, page: EventPage): void {
    const size = pageBytes(page);
    if (size > this.maxBytes) return;
    this.pages.set(key, page);
    this.bytes += size;
    for (const [oldest, old] of this.pages) {
      if (this.bytes <= this.maxBytes) break;
      this.pages.delete(oldest);
      this.bytes -= pageBytes(old);
    }
  }
}

/** Roughly what a page holds in memory: its frames and three numbers per event. */
const pageBytes = (page: EventPage) => page.bytes.length + page.seqs.length * 24;
