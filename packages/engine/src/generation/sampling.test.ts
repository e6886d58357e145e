import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng } from "../rng.js";
import { argmax, TokenSampler } from "./sampling.js";

/** Logits whose softmax at T = 1 is exactly `probs`. */
function logitsFor(probs: number[]): Float32Array {
  return Float32Array.from(probs, (p) => (p === 0 ? Number.NEGATIVE_INFINITY : Math.log(p)));
}

function histogram(
  sampler: TokenSampler,
  logits: Float32Array,
  temperature: number,
  topP: number,
  n: number,
) {
  const rng = new Rng(7);
  const counts = new Array(sampler.vocab).fill(0);
  for (let i = 0; i < n; i++) counts[sampler.sample(logits, { temperature, topP }, rng)]++;
  return counts.map((c) => c / n);
}

test("sampling: temperature 0 is argmax, lowest id on ties", () => {
  const sampler = new TokenSampler(5);
  const logits = Float32Array.of(0.5, 2, -1, 2, 1);
  assert.equal(sampler.sample(logits, { temperature: 0, topP: 0.1 }, new Rng(1)), 1);
  assert.equal(argmax(logits, 5), 1);
});

test("sampling: temperature 1 and topP 1 follow softmax(logits)", () => {
  const probs = [0.1, 0.2, 0.3, 0.4];
  const freq = histogram(new TokenSampler(4), logitsFor(probs), 1, 1, 40000);
  for (const [i, p] of probs.entries())
    assert.ok(Math.abs(freq[i] - p) < 0.01, `token ${i}: ${freq[i]} vs ${p}`);
});

test("sampling: temperature sharpens and flattens the distribution", () => {
  const logits = logitsFor([0.1, 0.2, 0.3, 0.4]);
  const sharp = histogram(new TokenSampler(4), logits, 0.25, 1, 20000);
  // softmax(log p / 0.25) ∝ p^4: 0.4^4 / Σ p^4 ≈ 0.723
  assert.ok(Math.abs(sharp[3] - 0.723) < 0.015, `p(3) at T=0.25: ${sharp[3]}`);
  const flat = histogram(new TokenSampler(4), logits, 100, 1, 20000);
  for (const [i, f] of flat.entries()) assert.ok(Math.abs(f - 0.25) < 0.015, `token ${i} at T=100: ${f}`);
});

test("sampling: topP keeps the smallest set reaching the mass, renormalised", () => {
  // sorted: 3 (0.4), 2 (0.3), 1 (0.2), 0 (0.1); cumulative 0.4, 0.7, 0.9, 1.0
  const logits = logitsFor([0.1, 0.2, 0.3, 0.4]);
  const sampler = new TokenSampler(4);
  const half = histogram(sampler, logits, 1, 0.5, 20000); // nucleus {3, 2}
  assert.equal(half[0], 0);
  assert.equal(half[1], 0);
  assert.ok(Math.abs(half[3] - 4 / 7) < 0.015, `p(3) = ${half[3]}`);
  const exact = histogram(sampler, logits, 1, 0.7, 20000); // 0.4 + 0.3 reaches 0.7: still {3, 2}
  assert.equal(exact[1] + exact[0], 0);
  const tiny = histogram(sampler, logits, 1, 0.01, 1000); // only the top token
  assert.equal(tiny[3], 1);
});

test("sampling: topP ties are broken by token id, deterministically", () => {
  const logits = logitsFor([0.25, 0.25, 0.25, 0.25]);
  const freq = histogram(new TokenSampler(4), logits, 1, 0.5, 10000); // {0, 1}
  assert.equal(freq[2] + freq[3], 0);
  assert.ok(freq[0] > 0.45 && freq[1] > 0.45);
});

test("sampling: topP over a large vocabulary with a long flat tail finds the whole nucleus", () => {
  // One strong token and 50,000 weak ones: the nucleus for topP 0.9 needs most of the tail,
  // which lies below the first candidate threshold.
  const vocab = 50001;
  const logits = new Float32Array(vocab).fill(0);
  logits[0] = Math.log(5000); // p0 = 5000 / 55000 ≈ 0.09
  const sampler = new TokenSampler(vocab);
  const rng = new Rng(3);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) seen.add(sampler.sample(logits, { temperature: 1, topP: 0.9 }, rng));
  assert.ok(seen.size > 1000, `only ${seen.size} distinct tokens drawn`);
  // The nucleus is token 0 plus the lowest-id tail tokens (ties by id): high ids never appear.
  const maxSeen = Math.max(...seen);
  assert.ok(maxSeen <= 0.9 * 55000 - 5000 + 1, `token ${maxSeen} is outside the nucleus`);
});

test("sampling: the same seed gives the same draws", () => {
  const logits = Float32Array.from({ length: 100 }, (_, i) => Math.sin(i));
  const sampler = new TokenSampler(100);
  const draw = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 50 }, () => sampler.sample(logits, { temperature: 0.8, topP: 0.9 }, rng));
  };
  assert.deepEqual(draw(42), draw(42));
  assert.notDeepEqual(draw(42), draw(43));
});

test("sampling among allowed ids: the distribution of the row with every other token at -Infinity", () => {
  const sampler = new TokenSampler(6);
  const logits = logitsFor([0.3, 0.1, 0.2, 0.15, 0.05, 0.2]);
  const ids = [5, 1, 2]; // any order
  // greedy: the best allowed id, the lowest on ties (2 and 5 tie at 0.2)
  assert.equal(sampler.sampleAmong(logits, ids, { temperature: 0, topP: 1 }, new Rng(1)), 2);
  const n = 40000;
  for (const topP of [1, 0.7]) {
    const rng = new Rng(3);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < n; i++) counts[sampler.sampleAmong(logits, ids, { temperature: 1, topP }, rng)]++;
    // renormalised over {1, 2, 5}: 0.2, 0.4, 0.4; top-p 0.7 keeps the two largest (ties by id): 2 and 5
    const expected = topP === 1 ? [0, 0.2, 0.4, 0, 0, 0.4] : [0, 0, 0.5, 0, 0, 0.5];
    for (const [id, c] of counts.entries()) {
      assert.ok(Math.abs(c / n - expected[id]) < 0.01, `id ${id}: ${c / n} vs ${expected[id]}`);
    }
  }
});
