import assert from "node:assert/strict";
import { test } from "node:test";
import type { Context } from "hono";
import {
  addressGroup,
  clientAddress,
  DEFAULT_MAX_BUCKETS,
  formatRateLimit,
  parseRateLimit,
  RateLimiter,
} from "./rate-limit.js";

test("parses <n>/<period> and off; refuses anything else naming the flag", () => {
  assert.deepEqual(parseRateLimit("rate-limit-key", "600/min"), { requests: 600, periodMs: 60_000 });
  assert.deepEqual(parseRateLimit("rate-limit-key", "5/s"), { requests: 5, periodMs: 1000 });
  assert.deepEqual(parseRateLimit("rate-limit-key", "100/h"), { requests: 100, periodMs: 3_600_000 });
  assert.equal(parseRateLimit("rate-limit-key", "off"), null);
  assert.equal(parseRateLimit("rate-limit-key", "0"), null);
  for (const bad of ["600", "1.5/s", "-1/s", "10/day", "/min", "0/min"])
    assert.throws(
      () => parseRateLimit("rate-limit-key", bad),
      /--rate-limit-key must be <requests>\/<s\|min\|h>/,
    );
  assert.equal(formatRateLimit({ requests: 600, periodMs: 60_000 }), "600/min");
  assert.equal(formatRateLimit(null), "off");
});

test("a bucket allows a burst of the limit, then one request per refill, and says when to retry", () => {
  let now = 0;
  const limiter = new RateLimiter({ requests: 3, periodMs: 3000 }, () => now);
  for (let i = 0; i < 3; i++) assert.deepEqual(limiter.take("a"), { allowed: true });
  assert.deepEqual(limiter.take("a"), { allowed: false, retryAfterSeconds: 1 });
  assert.deepEqual(limiter.take("b"), { allowed: true }, "keys have their own buckets");
  now = 999;
  assert.equal(limiter.take("a").allowed, false);
  now = 1000;
  assert.deepEqual(limiter.take("a"), { allowed: true }, "one request back after a third of the period");
  assert.equal(limiter.take("a").allowed, false);
  now = 100_000;
  for (let i = 0; i < 3; i++)
    assert.equal(limiter.take("a").allowed, true, "refilled to the limit, not past it");
  assert.equal(limiter.take("a").allowed, false);
});

test("Retry-After rounds up to whole seconds for slow limits", () => {
  let now = 0;
  const limiter = new RateLimiter({ requests: 1, periodMs: 60_000 }, () => now);
  assert.equal(limiter.take("k").allowed, true);
  assert.deepEqual(limiter.take("k"), { allowed: false, retryAfterSeconds: 60 });
  now = 59_500;
  assert.deepEqual(limiter.take("k"), { allowed: false, retryAfterSeconds: 1 });
});

test("no limit allows everything", () => {
  const limiter = new RateLimiter(null);
  for (let i = 0; i < 1000; i++) assert.equal(limiter.take("x").allowed, true);
});

/**
 * Counts the Map work done while `run` runs: get, set, delete and has calls,
 * iterator steps, and forEach visits. The limiter's state is its Map, so this
 * is all the work a request does on buckets, counted rather than timed.
 */
function countMapWork(run: () => void): number {
  const iterator = Object.getPrototypeOf(new Map().entries()) as { next(): unknown };
  const originals = {
    next: iterator.next,
    get: Map.prototype.get,
    set: Map.prototype.set,
    delete: Map.prototype.delete,
    has: Map.prototype.has,
    forEach: Map.prototype.forEach,
  };
  let work = 0;
  iterator.next = function (this: unknown) {
    work++;
    return originals.next.call(this);
  };
  for (const name of ["get", "set", "delete", "has"] as const) {
    const original = originals[name] as (...args: unknown[]) => unknown;
    (Map.prototype as unknown as Record<string, unknown>)[name] = function (
      this: Map<unknown, unknown>,
      ...args: unknown[]
    ) {
      work++;
      return original.apply(this, args);
    };
  }
  Map.prototype.forEach = function (
    this: Map<unknown, unknown>,
    ...args: Parameters<Map<unknown, unknown>["forEach"]>
  ) {
    work += this.size;
    return originals.forEach.apply(this, args);
  };
  try {
    run();
  } finally {
    Object.assign(iterator, { next: originals.next });
    Object.assign(Map.prototype, {
      get: originals.get,
      set: originals.set,
      delete: originals.delete,
      has: originals.has,
      forEach: originals.forEach,
    });
  }
  return work;
}

test("a spray of 150,000 keys holds at most maxBuckets buckets; the least recently used go first", {
  timeout: 30_000,
}, () => {
  const now = 0;
  const limiter = new RateLimiter({ requests: 5, periodMs: 60_000 }, () => now);
  assert.equal(limiter.maxBuckets, DEFAULT_MAX_BUCKETS);
  let most = 0;
  for (let i = 0; i < 150_000; i++) {
    // a key that keeps coming is never the least recently used: it keeps its bucket
    if (i % 100 === 0) limiter.take("steady");
    limiter.take(`spray-${i}`);
    most = Math.max(most, limiter.size);
  }
  assert.equal(most, DEFAULT_MAX_BUCKETS);
  assert.equal(limiter.size, DEFAULT_MAX_BUCKETS);
  assert.equal(limiter.take("steady").allowed, false, "steady kept its spent bucket");
  assert.equal(limiter.take("spray-149999").allowed, true, "a recent key kept its bucket (4 of 5 left)");
});

test("buckets idle a whole period are dropped by the next request, whether or not they were full", () => {
  let now = 0;
  const limiter = new RateLimiter({ requests: 2, periodMs: 60_000 }, () => now, 200_000);
  for (let i = 0; i < 100_000; i++) limiter.take(`spray-${i}`);
  now = 30_000;
  limiter.take("spent");
  limiter.take("spent");
  assert.equal(limiter.size, 100_001);
  now = 59_999;
  limiter.take("a");
  assert.equal(limiter.size, 100_002, "not yet idle a whole period");
  now = 60_000;
  limiter.take("b");
  assert.equal(limiter.size, 3, "the spray is gone; spent, a and b are kept");
  assert.equal(limiter.take("spent").allowed, true, "one request back after half the period");
  assert.equal(limiter.take("spent").allowed, false, "spent kept its bucket");
});

test("the work per request is constant: no request scans the buckets", { timeout: 30_000 }, () => {
  let now = 0;
  const limit = { requests: 3, periodMs: 60_000 };
  const spray = (limiter: RateLimiter, keys: number, prefix: string) => {
    for (let i = 0; i < keys; i++) limiter.take(`${prefix}-${i}`);
  };
  // past 10,000 buckets, where a limiter that sweeps by scanning does so for every new key
  const fresh = new RateLimiter(limit, () => now);
  const freshWork = countMapWork(() => spray(fresh, 15_000, "new"));
  assert.ok(freshWork <= 6 * 15_000, `${freshWork} Map operations for 15,000 new keys`);
  // at the bound: each new key drops the least recently used bucket
  const full = new RateLimiter(limit, () => now, 1000);
  spray(full, 1000, "first");
  const fullWork = countMapWork(() => spray(full, 100_000, "more"));
  assert.ok(fullWork <= 6 * 100_000, `${fullWork} Map operations for 100,000 keys past the bound`);
  // after a period idle: the first request drops every idle bucket, which the requests that made them pay for
  now = 60_000;
  const idleWork = countMapWork(() => spray(fresh, 15_000, "later"));
  assert.equal(fresh.size, 15_000);
  assert.ok(idleWork <= 8 * 15_000, `${idleWork} Map operations for 15,000 keys dropping 15,000 idle ones`);
  // requests of known keys
  const knownWork = countMapWork(() => spray(fresh, 15_000, "later"));
  assert.ok(knownWork <= 6 * 15_000, `${knownWork} Map operations for 15,000 known keys`);
});

test("per-address limits count an IPv6 client by its /64 and an IPv4-mapped address as IPv4", () => {
  assert.equal(addressGroup("203.0.113.7"), "203.0.113.7");
  assert.equal(addressGroup("::ffff:203.0.113.7"), "203.0.113.7");
  assert.equal(addressGroup("::FFFF:cb00:7107"), "203.0.113.7");
  assert.equal(addressGroup("0:0:0:0:0:ffff:203.0.113.7"), "203.0.113.7");
  assert.equal(addressGroup("2001:db8:0:7::1"), "2001:db8:0:7::/64");
  assert.equal(addressGroup("2001:0DB8:0000:0007:ffff:1:2:3"), "2001:db8:0:7::/64");
  assert.equal(addressGroup("2001:db8::7:1:2:3:4"), "2001:db8:0:7::/64");
  assert.equal(addressGroup("2001:db8:0:8::1"), "2001:db8:0:8::/64", "the next /64 is another client");
  assert.equal(addressGroup("::1"), "0:0:0:0::/64");
  assert.equal(addressGroup("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(addressGroup("::fffe:0:7"), "0:0:0:0::/64", "only ::ffff:0:0/96 is IPv4-mapped");
  assert.equal(addressGroup("unknown"), "unknown");

  const peer = (remoteAddress: string) =>
    clientAddress({ env: { incoming: { socket: { remoteAddress } } } } as unknown as Context);
  const limiter = new RateLimiter({ requests: 4, periodMs: 60_000 }, () => 0);
  const signups = (addresses: string[]) => addresses.map((a) => limiter.take(peer(a)).allowed);
  // one client rotating through its /64: a fresh address per sign-up
  const rotating = Array.from(
    { length: 10 },
    (_, i) => `2001:db8:0:7:${((i * 7919) & 0xffff).toString(16)}::${i + 1}`,
  );
  assert.deepEqual(signups(rotating), [true, true, true, true, false, false, false, false, false, false]);
  assert.deepEqual(signups(["2001:db8:0:8::1"]), [true], "a neighbouring /64 has its own bucket");
  assert.deepEqual(signups(["198.51.100.2", "::ffff:198.51.100.2"]), [true, true]);
  assert.deepEqual(signups(["::ffff:198.51.100.2", "198.51.100.2", "198.51.100.2"]), [true, true, false]);
  assert.equal(clientAddress({ env: {} } as unknown as Context), "unknown", "no socket: one shared bucket");
});
