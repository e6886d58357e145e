import assert from "node:assert/strict";
import { test } from "node:test";
import { backoffDelay, sleep } from "./backoff.js";

test("backoff grows exponentially, is capped, and jitters within [cap/2, cap)", () => {
  const lo = () => 0;
  const hi = () => 0.999999;
  assert.equal(backoffDelay(0, { baseMs: 100, random: lo }), 50);
  assert.equal(backoffDelay(3, { baseMs: 100, random: lo }), 400);
  assert.equal(backoffDelay(20, { baseMs: 100, maxMs: 5000, random: lo }), 2500);
  assert.equal(backoffDelay(20, { baseMs: 100, maxMs: 5000, random: hi }), 4999);
  const draws = new Set(Array.from({ length: 50 }, () => backoffDelay(4, { baseMs: 100 })));
  assert.ok(draws.size > 10, "jitter spreads the delays");
  for (const d of draws) assert.ok(d >= 800 && d < 1600);
});

test("sleep rejects with the abort reason", async () => {
  const ac = new AbortController();
  const p = sleep(10_000, ac.signal);
  ac.abort(new Error("stop"));
  await assert.rejects(p, /stop/);
});
