// Live delivery of stored job events. Producers append to the database and
// signal the job id (in-process, and through PostgreSQL LISTEN/NOTIFY for
// other processes); the hub then reads the new rows once per job and hands
// them to every subscriber of that job, so 200 watchers cost one query;
// signals within a short window are read together.
import type { JobStore, StoredJobEvent } from "../store/job-store.js";
import { dropSupersededSteps } from "./superseded-steps.js";

type Listener = (events: StoredJobEvent[]) => void;

/** One subscriber: what it has been given so far, and a buffer while its history loads. */
interface Subscriber {
  delivered: number;
  buffered: StoredJobEvent[] | null;
  onEvents: Listener;
}

interface JobFeed {
  subscribers: Set<Subscriber>;
  fetching: Promise<void> | null;
  again: boolean;
}

export class JobEventHub {
  private readonly feeds = new Map<string, JobFeed>();

  /**
   * `coalesceMs`: how long a signal waits before reading, so a burst of events
   * (a fast training loop) reaches each subscriber as one read and one write.
   */
  constructor(
    private readonly jobs: JobStore,
    private readonly coalesceMs = 50,
  ) {
    jobs.onEventsAppended = (jobId) => this.signal(jobId);
  }

  /**
   * Subscribes to a job's events after `afterSeq`: stored history first, then
   * live events, in order and without gaps or repeats.
   */
  async subscribe(jobId: string, afterSeq: number, onEvents: Listener): Promise<() => void> {
    const subscriber: Subscriber = { delivered: afterSeq, buffered: [], onEvents };
    const feed = this.feedOf(jobId);
    feed.subscribers.add(subscriber);
    // History leaves out the steps a resume superseded (live readers drop them on the resume).
    const history = dropSupersededSteps(await this.jobs.eventsAfter(jobId, afterSeq));
    const pending = subscriber.buffered ?? [];
    subscriber.buffered = null;
    deliver(subscriber, history);
    deliver(subscriber, pending);
    return () => {
      feed.subscribers.delete(subscriber);
      if (feed.subscribers.size === 0 && !feed.fetching) this.feeds.delete(jobId);
    };
  }

  signal(jobId: string): void {
    const feed = this.feeds.get(jobId);
    if (!feed) return;
    if (feed.fetching) {
      feed.again = true;
      return;
    }
    feed.fetching = (async () => {
      if (this.coalesceMs > 0) await new Promise((resolve) => setTimeout(resolve, this.coalesceMs));
      do {
        feed.again = false;
        try {
          // Read from the least advanced subscriber so nobody misses an event
          // that committed between its history read and this signal.
          let from = Number.POSITIVE_INFINITY;
          for (const s of feed.subscribers) from = Math.min(from, s.delivered);
          if (from === Number.POSITIVE_INFINITY) break;
          const events = await this.jobs.eventsAfter(jobId, from);
          for (const s of feed.subscribers) deliver(s, events);
        } catch (error) {
          console.error(`svc server: reading events of job ${jobId} failed:`, (error as Error).message);
        }
      } while (feed.again);
      feed.fetching = null;
      if (feed.subscribers.size === 0) this.feeds.delete(jobId);
    })();
  }

  /** Re-reads every watched job (after live signals may have been missed). */
  signalAll(): void {
    for (const jobId of this.feeds.keys()) this.signal(jobId);
  }

  private feedOf(jobId: string): JobFeed {
    let feed = this.feeds.get(jobId);
    if (!feed) {
      feed = { subscribers: new Set(), fetching: null, again: false };
      this.feeds.set(jobId, feed);
    }
    return feed;
  }
}

function deliver(subscriber: Subscriber, events: StoredJobEvent[]): void {
  if (subscriber.buffered) {
    subscriber.buffered.push(...events);
    return;
  }
  const fresh = events.filter((e) => e.seq > subscriber.delivered);
  if (fresh.length === 0) return;
  subscriber.delivered = fresh[fresh.length - 1].seq;
  subscriber.onEvents(fresh);
}
