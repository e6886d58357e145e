// Choosing the next token from one row of logits: greedy at temperature 0,
// otherwise softmax(logits / T) restricted to the top-p nucleus and drawn with
// the request's own seeded PRNG (same seed + same request → same tokens).
import type { TurnSampler } from "../constrained/constraint.js";
import { Rng } from "../rng.js";

export interface SamplingParams {
  /** 0 = greedy (argmax, lowest id on ties). */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 keeps the whole vocabulary. */
  topP: number;
}

/** The PRNG a request samples with; without a seed, a random one. */
export function samplingRng(seed: number | undefined): Rng {
  return new Rng(seed ?? Math.floor(Math.random() * 0x100000000));
}

/** Index of the largest value (the first one on ties). */
export function argmax(logits: Float32Array, vocab: number): number {
  let best = 0;
  let bestValue = logits[0];
  for (let i = 1; i < vocab; i++) {
    if (logits[i] > bestValue) {
      bestValue = logits[i];
      best = i;
    }
  }
  return best;
}

/**
 * Samples token ids from logits rows. Holds scratch for one vocabulary so a
 * decode step allocates nothing; not reentrant (one sample at a time).
 */
export class TokenSampler implements TurnSampler {
  private readonly probs: Float64Array; // [vocab] unnormalised exp((logit - max) / T)
  private readonly candidates: Int32Array; // [vocab] token ids of the nucleus candidates
  private masked: Float32Array | null = null; // [vocab] sampleAmong's masked row for top-p

  constructor(readonly vocab: number) {
    this.probs = new Float64Array(vocab);
    this.candidates = new Int32Array(vocab);
  }

  /** logits: one row [vocab] (a view is fine). */
  sample(logits: Float32Array, params: SamplingParams, rng: Rng): number {
    const vocab = this.vocab;
    if (params.temperature === 0) return argmax(logits, vocab);

    const probs = this.probs;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < vocab; i++) if (logits[i] > max) max = logits[i];
    const invT = 1 / params.temperature;
    let total = 0;
    for (let i = 0; i < vocab; i++) {
      const p = Math.exp((logits[i] - max) * invT);
      probs[i] = p;
      total += p;
    }
    // One uniform draw per token whatever the path, so topP does not shift the stream.
    const u = rng.next();
    if (params.topP >= 1) return this.drawInOrder(u * total);
    return this.drawFromNucleus(u, total, params.topP);
  }

  /**
   * Samples among `ids` only, as sample() would from logits where every other
   * token is -Infinity, at the cost of the candidates rather than the whole
   * vocabulary (constrained decoding's allowed tokens; constrained/constraint.ts).
   */
  sampleAmong(logits: Float32Array, ids: readonly number[], params: SamplingParams, rng: Rng): number {
    if (params.temperature === 0) {
      let best = ids[0];
      for (const id of ids)
        if (logits[id] > logits[best] || (logits[id] === logits[best] && id < best)) best = id;
      return best;
    }
    if (params.topP < 1) {
      // the nucleus needs sample()'s ordering: mask a copy of the row
      const masked = this.masked ?? new Float32Array(this.vocab);
      this.masked = masked;
      masked.fill(Number.NEGATIVE_INFINITY);
      for (const id of ids) masked[id] = logits[id];
      return this.sample(masked, params, rng);
    }
    let max = Number.NEGATIVE_INFINITY;
    for (const id of ids) if (logits[id] > max) max = logits[id];
    const invT = 1 / params.temperature;
    const probs = this.probs;
    let total = 0;
    for (let j = 0; j < ids.length; j++) {
      const p = Math.exp((logits[ids[j]] - max) * invT);
      probs[j] = p;
      total += p;
    }
    const target = rng.next() * total;
    let acc = 0;
    for (let j = 0; j < ids.length; j++) {
      acc += probs[j];
      if (acc > target) return ids[j];
    }
    return ids[ids.length - 1];
  }

  /** The token where the running sum of probs (in id order) passes `target`. */
  private drawInOrder(target: number): number {
    const probs = this.probs;
    let acc = 0;
    let last = 0;
    for (let i = 0; i < this.vocab; i++) {
      if (probs[i] === 0) continue;
      acc += probs[i];
      last = i;
      if (acc > target) return i;
    }
    return last; // rounding left target at the very top
  }

  /**
   * The nucleus is the shortest prefix of the tokens sorted by (prob desc, id
   * asc) whose mass reaches topP. Sorting the whole vocabulary every token is
   * slow, so candidates are the tokens above a threshold, lowered until their
   * mass reaches topP: they are then a prefix of that order, and so hold the nucleus.
   */
  private drawFromNucleus(u: number, total: number, topP: number): number {
    const probs = this.probs;
    const candidates = this.candidates;
    const need = topP * total;
    let threshold = 1e-3; // relative to the max prob, which is 1 after the shift
    let count = 0;
    for (;;) {
      count = 0;
      let mass = 0;
      for (let i = 0; i < this.vocab; i++) {
        if (probs[i] >= threshold) {
          candidates[count++] = i;
          mass += probs[i];
        }
      }
      if (mass >= need || threshold === 0) break;
      threshold = threshold < 1e-30 ? 0 : threshold * 1e-6;
    }
    const sorted = candidates.subarray(0, count).sort((a, b) => probs[b] - probs[a] || a - b);
    let nucleusSize = 0;
    let nucleusMass = 0;
    while (nucleusSize < count) {
      nucleusMass += probs[sorted[nucleusSize++]];
      if (nucleusMass >= need) break;
    }
    const target = u * nucleusMass;
    let acc = 0;
    for (let j = 0; j < nucleusSize; j++) {
      acc += probs[sorted[j]];
      if (acc > target) return sorted[j];
    }
    return sorted[nucleusSize - 1];
  }
}
