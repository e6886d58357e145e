// Request rate limits: a token bucket per key (a deployment key, an identity,
// a client address), refilled continuously, so a client may burst up to the
// limit and then goes at the limit's pace. Buckets live in this process's
// memory: with several API processes each one enforces the limit on its own
// share of the traffic.
//
// Memory is bounded and no request scans the buckets: they are kept in order
// of last use, so the least recently used is always first. A bucket unused for
// a whole period is full again, the same as no bucket, and is dropped when the
// next request comes; at maxBuckets the least recently used one is dropped
// even if it is not full (its key then starts again from a full bucket).
// Each request adds at most one bucket and drops only what was added before,
// so the work per request is constant, amortised.
import { isIPv4, isIPv6 } from "node:net";
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import { ApiError } from "./api-error.js";

/** "600/min" → 600 requests per 60 s; "off" (or 0) disables the limit. */
export interface RateLimit {
  requests: number;
  periodMs: number;
}

const PERIODS: Record<string, number> = { s: 1000, sec: 1000, min: 60_000, h: 3_600_000, hour: 3_600_000 };

/** Parses "<n>/<s|min|h>" or "off"; throws an Error naming the flag otherwise. */
export function parseRateLimit(flag: string, text: string): RateLimit | null {
  if (text === "off" || text === "0") return null;
  const match = /^(\d+)\/(s|sec|min|h|hour)$/.exec(text.trim());
  const requests = match ? Number(match[1]) : Number.NaN;
  if (!match || !Number.isSafeInteger(requests) || requests < 1)
    throw new Error(`--${flag} must be <requests>/<s|min|h> (e.g. 600/min) or off (got ${text})`);
  return { requests, periodMs: PERIODS[match[2]] };
}

export const formatRateLimit = (limit: RateLimit | null): string => {
  if (!limit) return "off";
  const unit = Object.entries(PERIODS).find(([, ms]) => ms === limit.periodMs)?.[0] ?? `${limit.periodMs}ms`;
  return `${limit.requests}/${unit}`;
};

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Most buckets one limiter keeps by default (a bucket takes about 90 bytes of heap besides its key). */
export const DEFAULT_MAX_BUCKETS = 50_000;

export class RateLimiter {
  /** Buckets by key, least recently used first (a Map keeps insertion order; each use re-inserts its key). */
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly limit: RateLimit | null,
    private readonly now: () => number = Date.now,
    readonly maxBuckets: number = DEFAULT_MAX_BUCKETS,
  ) {
    if (!Number.isSafeInteger(maxBuckets) || maxBuckets < 1)
      throw new Error(`maxBuckets must be a positive integer (got ${maxBuckets})`);
  }

  /** Buckets held now: at most maxBuckets. */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes one request from `key`'s bucket, or says how long until one is free. */
  take(key: string): RateDecision {
    const limit = this.limit;
    if (!limit) return { allowed: true };
    const now = this.now();
    const perMs = limit.requests / limit.periodMs;
    let bucket = this.buckets.get(key);
    if (bucket) {
      this.buckets.delete(key);
      bucket.tokens = Math.min(limit.requests, bucket.tokens + Math.max(0, now - bucket.updatedMs) * perMs);
      bucket.updatedMs = now;
    } else bucket = { tokens: limit.requests, updatedMs: now };
    this.forgetOldest(now, limit.periodMs);
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }

  /** Drops the least recently used buckets while they are idle a whole period (full again) or the limiter has no room for one more. */
  private forgetOldest(now: number, periodMs: number): void {
    for (;;) {
      const oldest = this.buckets.entries().next();
      if (oldest.done) return;
      const [key, bucket] = oldest.value;
      if (this.buckets.size < this.maxBuckets && now - bucket.updatedMs < periodMs) return;
      this.buckets.delete(key);
    }
  }
}

/** The operator's limits (svc server --rate-limit-*), each per key of its kind. */
export interface RateLimits {
  /** Edge requests per deployment key (open deployments: per deployment and client address). */
  key: RateLimit | null;
  /** Cloud API requests per identity (the bearer token's user). */
  identity: RateLimit | null;
  /** Anonymous sign-ups (POST /v1/auth/anonymous) per client address. */
  signup: RateLimit | null;
}

export const DEFAULT_RATE_LIMITS: RateLimits = {
  key: { requests: 600, periodMs: 60_000 },
  identity: { requests: 1200, periodMs: 60_000 },
  signup: { requests: 30, periodMs: 60_000 },
};

/** One limiter per kind of limit, shared by every route of this process. */
export class RateLimiters {
  readonly key: RateLimiter;
  readonly identity: RateLimiter;
  readonly signup: RateLimiter;

  constructor(limits: RateLimits = DEFAULT_RATE_LIMITS) {
    this.key = new RateLimiter(limits.key);
    this.identity = new RateLimiter(limits.identity);
    this.signup = new RateLimiter(limits.signup);
  }
}

/**
 * The client a request came from, as the per-address limits count clients:
 * the socket peer's IPv4 address, or the /64 network of an IPv6 one (one
 * host's or one site's share, which a client may rotate through freely). svc
 * server is reached directly, not through a proxy.
 */
export function clientAddress(c: Context): string {
  const address = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.remoteAddress;
  return address === undefined ? "unknown" : addressGroup(address);
}

/**
 * An IPv4 address as it is; an IPv4-mapped IPv6 address (::ffff:a.b.c.d, as a
 * dual-stack socket reports IPv4 peers) as its IPv4 address; any other IPv6
 * address as its /64 network, e.g. "2001:db8:0:7::/64". Anything else is returned unchanged.
 */
export function addressGroup(address: string): string {
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff)
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join(".");
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (a zone such as %eth0 ignored), or null for anything else. */
function ipv6Groups(address: string): number[] | null {
  let text = address.split("%")[0];
  if (!isIPv6(text)) return null;
  // a trailing dotted IPv4 part (::ffff:192.0.2.1) is the last two groups
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const parse = (part: string | undefined) =>
    part ? part.split(":").map((g) => Number.parseInt(g, 16)) : [];
  const front = parse(head);
  const back = parse(tail);
  const zeros = tail === undefined ? 0 : 8 - front.length - back.length;
  return [...front, ...new Array<number>(zeros).fill(0), ...back];
}

/**
 * Takes one request of `key` from `limiter`; over the limit, sets Retry-After
 * and throws 429 rate_limit_exceeded naming `what` was limited.
 */
export function enforceRateLimit(c: Context, limiter: RateLimiter, key: string, what: string): void {
  const decision = limiter.take(key);
  if (decision.allowed) return;
  c.header("Retry-After", String(decision.retryAfterSeconds));
  throw new ApiError(
    429,
    "rate_limit_exceeded",
    `too many requests ${what} (limit ${formatRateLimit(limiter.limit)}); retry after ${decision.retryAfterSeconds} s`,
  );
}
