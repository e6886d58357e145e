// Request rate limits: a token bucket per key (a deployment key, an identity,
// a client address), refilled continuously, so a client may burst up to the
// limit and then goes at the limit's pace. Buckets live in this process's
// memory: with several API processes each one enforces the limit on its own
// share of the traffic.
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

// Past this many buckets, full ones (idle for a whole period) are dropped.
const SWEEP_AT = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly limit: RateLimit | null,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one request from `key`'s bucket, or says how long until one is free. */
  take(key: string): RateDecision {
    const limit = this.limit;
    if (!limit) return { allowed: true };
    const now = this.now();
    const perMs = limit.requests / limit.periodMs;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= SWEEP_AT) this.sweep(now, perMs);
      bucket = { tokens: limit.requests, updatedMs: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(limit.requests, bucket.tokens + (now - bucket.updatedMs) * perMs);
      bucket.updatedMs = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }

  private sweep(now: number, perMs: number): void {
    const limit = this.limit as RateLimit;
    for (const [key, bucket] of this.buckets)
      if (bucket.tokens + (now - bucket.updatedMs) * perMs >= limit.requests) this.buckets.delete(key);
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

/** The address a request came from (the socket's peer; svc server is reached directly, not through a proxy). */
export function clientAddress(c: Context): string {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.remoteAddress ?? "unknown";
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
