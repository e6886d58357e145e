import assert from "node:assert/strict";
import { test } from "node:test";
import { formatRateLimit, parseRateLimit, RateLimiter } from "./rate-limit.js";

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
