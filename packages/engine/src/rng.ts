// A small seeded PRNG (xoshiro128**, seeded through splitmix32) whose whole
// state is four integers, so training can checkpoint it and resume exactly.

export type RngState = [number, number, number, number];

export class Rng {
  private s: Uint32Array;

  constructor(seed: number | RngState) {
    this.s = new Uint32Array(4);
    if (Array.isArray(seed)) {
      this.s.set(seed);
      return;
    }
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      // splitmix32: spreads a small integer seed over the whole state
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
    if ((this.s[0] | this.s[1] | this.s[2] | this.s[3]) === 0) this.s[0] = 1;
  }

  state(): RngState {
    return [this.s[0], this.s[1], this.s[2], this.s[3]];
  }

  /** A uniform 32-bit unsigned integer. */
  nextU32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** A uniform float in [0, 1) with 32 bits of randomness. */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A standard normal sample (Box–Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Fisher–Yates shuffle in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i];
      items[i] = items[j];
      items[j] = tmp;
    }
    return items;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
