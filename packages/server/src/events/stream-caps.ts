// Caps on concurrent event streams (GET /v1/jobs/:id/events), per identity
// (the bearer token's user) and per job, so one token cannot hold an
// unbounded number of connections. Counted in this process's memory, like the
// request rate limits: with several API processes each one caps its own
// streams. Over a cap: 429 rate_limit_exceeded with Retry-After, as the rate
// limits answer.
import type { Context } from "hono";
import { ApiError } from "../http/api-error.js";

export interface EventStreamLimits {
  /** Concurrent streams per identity; null: no cap (svc server --event-streams-per-identity). */
  perIdentity: number | null;
  /** Concurrent streams per job; null: no cap (--event-streams-per-job). */
  perJob: number | null;
  /** Unsent bytes one stream may hold before it is disconnected (--event-stream-buffer-bytes). */
  bufferBytes: number;
}

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = {
  perIdentity: 64,
  perJob: 512,
  bufferBytes: 1024 * 1024,
};

/** A stream is held for about this long at least: try again after it. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

export class EventStreamCaps {
  private readonly identities = new Map<string, number>();
  private readonly jobs = new Map<string, number>();

  constructor(readonly limits: EventStreamLimits) {}

  /**
   * Takes a stream slot for `identity` on `jobId`, or sets Retry-After and
   * throws 429 naming the cap. The returned function gives the slot back (once).
   */
  open(c: Context, identity: string, jobId: string): () => void {
    const over = (what: string, limit: number) => {
      c.header("Retry-After", String(STREAM_RETRY_AFTER_SECONDS));
      return new ApiError(
        429,
        "rate_limit_exceeded",
        `too many event streams open ${what} (limit ${limit} at once); retry after ${STREAM_RETRY_AFTER_SECONDS} s`,
      );
    };
    const { perIdentity, perJob } = this.limits;
    if (perIdentity !== null && (this.identities.get(identity) ?? 0) >= perIdentity)
      throw over("for this identity", perIdentity);
    if (perJob !== null && (this.jobs.get(jobId) ?? 0) >= perJob) throw over("on this job", perJob);
    add(this.identities, identity, 1);
    add(this.jobs, jobId, 1);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      add(this.identities, identity, -1);
      add(this.jobs, jobId, -1);
    };
  }

  /** Streams open now (for tests and diagnostics). */
  openStreams(): number {
    let n = 0;
    for (const count of this.jobs.values()) n += count;
    return n;
  }
}

function add(counts: Map<string, number>, key: string, delta: number): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
