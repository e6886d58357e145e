// Delivery of stored job events to event-stream subscribers. Producers append
// to the database and signal the job id (in-process, and through PostgreSQL
// LISTEN/NOTIFY for other processes).
//
// A new subscriber first replays history on its own: page by page from the
// store (EventPageCache: subscribers replaying the same job share each page),
// one page written at a time with backpressure, so a reader that does not
// keep up only slows its own replay and never holds more than a page. Once a
// page reaches the log's end, the subscriber joins the job's live set (and a
// live read catches it up on what came meanwhile). A signal then reads the new rows once per job,
// from the live set's cursor only (never from a replaying subscriber's), and
// pushes the same bytes to every live subscriber; signals within a short
// window are read together.
//
// Replay work goes through a gate: a few page reads at a time, each in a
// turn of the event loop of its own (BackgroundTurns: one that accepted no
// connection), so any number of replays cannot starve other requests, nor
// hold up the accepting of their connections.
import type { JobStore } from "../store/job-store.js";
import { BackgroundTurns } from "./background-turns.js";
import { type EventPage, EventPageCache, encodePage, type PageSlice, sliceAfter } from "./event-pages.js";
import { ResumeMarkers } from "./superseded-steps.js";

/** Where a subscriber's frames go (an SseConnection). */
export interface EventSink {
  readonly closed: boolean;
  /** Replay: false when the caller should wait for drained() before writing more. */
  write(bytes: Uint8Array): boolean;
  /** Live: written at once; the sink disconnects itself when its buffer limit is passed. */
  push(bytes: Uint8Array): void;
  drained(): Promise<void>;
  end(): void;
  drop(reason: string): void;
}

interface Subscriber {
  /** The seq of the last event it was given (or that replay left out as superseded). */
  delivered: number;
  sink: EventSink;
}

interface JobFeed {
  /** Every subscriber, replaying or live. */
  subscribers: Set<Subscriber>;
  live: Set<Subscriber>;
  /** Counts signals: a replay that saw one while it read the log's end has a live read catch it up. */
  signals: number;
  /** The highest seq a live read has delivered. */
  head: number;
  fetching: Promise<void> | null;
  again: boolean;
  markers: { at: number; value: Promise<ResumeMarkers> } | null;
}

export interface JobEventHubOptions {
  /** How long a signal waits before reading, so a burst of events is one read and one write per subscriber. */
  coalesceMs?: number;
  /** Events per page of a replay and per live read. */
  pageSize?: number;
  /** Memory for replay pages shared by subscribers. */
  cacheBytes?: number;
  /** Replay page reads in progress at once. */
  replayConcurrency?: number;
}

export const HUB_DEFAULTS: Required<JobEventHubOptions> = {
  coalesceMs: 50,
  pageSize: 256,
  cacheBytes: 32 * 1024 * 1024,
  replayConcurrency: 4,
};

/** Resume markers read this recently are reused (a stale set only lets a reader drop frames itself). */
const MARKERS_FRESH_MS = 1000;

/** Live subscribers written to per turn of the event loop. */
const FANOUT_PER_TURN = 64;

/** Admits `slots` replay steps at a time, each only in a background turn of the event loop. */
class ReplayGate {
  private readonly waiting: (() => void)[] = [];

  constructor(
    private free: number,
    private readonly turns: BackgroundTurns,
  ) {}

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return this.turns.turn();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) void this.turns.turn().then(next);
    else this.free++;
  }
}

export class JobEventHub {
  private readonly feeds = new Map<string, JobFeed>();
  private readonly options: Required<JobEventHubOptions>;
  private readonly pages: EventPageCache;
  private readonly gate: ReplayGate;

  constructor(
    private readonly jobs: JobStore,
    options: JobEventHubOptions = {},
    private readonly turns = new BackgroundTurns(),
  ) {
    this.options = { ...HUB_DEFAULTS, ...options };
    this.pages = new EventPageCache(
      (id, after, limit) => jobs.eventsPage(id, after, limit),
      this.options.cacheBytes,
    );
    this.gate = new ReplayGate(this.options.replayConcurrency, turns);
    jobs.onEventsAppended = (jobId) => this.signal(jobId);
  }

  /**
   * Subscribes `sink` to a job's events after `afterSeq`: stored history
   * first, then live events, in order and without gaps or repeats, ending the
   * sink after `end`. Returns the unsubscribe function.
   */
  subscribe(jobId: string, afterSeq: number, sink: EventSink): () => void {
    const feed = this.feedOf(jobId);
    const subscriber: Subscriber = { delivered: afterSeq, sink };
    feed.subscribers.add(subscriber);
    this.replay(jobId, feed, subscriber).catch((error) => {
      console.error(`svc server: replaying events of job ${jobId} failed:`, (error as Error).message);
      sink.drop("reading its events failed");
    });
    return () => {
      feed.subscribers.delete(subscriber);
      feed.live.delete(subscriber);
      this.forgetIfIdle(jobId, feed);
    };
  }

  signal(jobId: string): void {
    const feed = this.feeds.get(jobId);
    if (!feed) return;
    feed.signals++;
    if (feed.live.size === 0) return;
    if (feed.fetching) {
      feed.again = true;
      return;
    }
    feed.fetching = this.readLive(jobId, feed).finally(() => {
      feed.fetching = null;
      this.forgetIfIdle(jobId, feed);
    });
  }

  /** Re-reads every watched job (after live signals may have been missed). */
  signalAll(): void {
    for (const jobId of this.feeds.keys()) this.signal(jobId);
  }

  private async replay(jobId: string, feed: JobFeed, s: Subscriber): Promise<void> {
    const markers = await this.markersOf(jobId, feed);
    const { pageSize } = this.options;
    for (;;) {
      const signals = feed.signals;
      // Pages end on multiples of the page size, so replays from any id share the cached pages after the first.
      const limit = pageSize - (s.delivered % pageSize);
      let page: EventPage;
      let slice: PageSlice;
      let room: boolean;
      await this.gate.acquire();
      try {
        if (!feed.subscribers.has(s) || s.sink.closed) return;
        page = await this.pages.page(jobId, s.delivered, limit);
        if (!feed.subscribers.has(s) || s.sink.closed) return;
        slice = sliceAfter(page, s.delivered, markers);
        s.delivered = slice.through;
        room = s.sink.write(slice.bytes);
      } finally {
        this.gate.release();
      }
      if (slice.ended) return s.sink.end();
      if (page.seqs.length < limit) {
        // At the log's end: live from here on. Events that came since this read began (a signal, or a
        // live read past this page) are read once more, by the live read, from this subscriber on.
        if (!feed.subscribers.has(s) || s.sink.closed) return;
        feed.live.add(s);
        if (feed.signals !== signals || s.delivered < feed.head) this.signal(jobId);
        return;
      }
      if (!room) await s.sink.drained();
    }
  }

  private async readLive(jobId: string, feed: JobFeed): Promise<void> {
    if (this.options.coalesceMs > 0)
      await new Promise((resolve) => setTimeout(resolve, this.options.coalesceMs));
    do {
      feed.again = false;
      let from = Number.POSITIVE_INFINITY;
      for (const s of feed.live) from = Math.min(from, s.delivered);
      if (from === Number.POSITIVE_INFINITY) break;
      try {
        const events = await this.jobs.eventsPage(jobId, from, this.options.pageSize);
        // A full page: read on after this one (after letting other work run).
        if (events.length === this.options.pageSize) feed.again = true;
        const page = encodePage(events);
        if (events.length > 0) feed.head = Math.max(feed.head, page.seqs[page.seqs.length - 1]);
        const targets = [...feed.live];
        for (let i = 0; i < targets.length; i++) {
          // A few socket writes per turn of the event loop, however many subscribers there are.
          if (i > 0 && i % FANOUT_PER_TURN === 0) await this.turns.turn();
          const s = targets[i];
          if (!feed.live.has(s)) continue;
          const slice = sliceAfter(page, s.delivered, null);
          if (slice.through === s.delivered) continue;
          s.delivered = slice.through;
          s.sink.push(slice.bytes);
          if (slice.ended) s.sink.end();
        }
        // Joined after this read began (further back than it read, or while it was handed out): read again.
        for (const s of feed.live) if (s.delivered < from || s.delivered < feed.head) feed.again = true;
      } catch (error) {
        console.error(`svc server: reading events of job ${jobId} failed:`, (error as Error).message);
      }
      if (feed.again) await this.turns.turn();
    } while (feed.again);
  }

  /** The job's resume markers, read once for every subscriber that starts a replay within MARKERS_FRESH_MS. */
  private markersOf(jobId: string, feed: JobFeed): Promise<ResumeMarkers> {
    const now = Date.now();
    if (!feed.markers || now - feed.markers.at > MARKERS_FRESH_MS) {
      const value = this.jobs.runStarts(jobId).then((starts) => ResumeMarkers.of(starts));
      const markers = { at: now, value };
      feed.markers = markers;
      value.catch(() => {
        if (feed.markers === markers) feed.markers = null;
      });
    }
    return feed.markers.value;
  }

  private feedOf(jobId: string): JobFeed {
    let feed = this.feeds.get(jobId);
    if (!feed) {
      feed = {
        subscribers: new Set(),
        live: new Set(),
        signals: 0,
        head: 0,
        fetching: null,
        again: false,
        markers: null,
      };
      this.feeds.set(jobId, feed);
    }
    return feed;
  }

  private forgetIfIdle(jobId: string, feed: JobFeed): void {
    if (feed.subscribers.size === 0 && !feed.fetching && this.feeds.get(jobId) === feed)
      this.feeds.delete(jobId);
  }
}
