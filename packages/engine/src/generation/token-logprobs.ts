// The log-probability of each generated token (OpenAI's logprobs), read from
// the distribution the token was drawn from: the logits after logit_bias and
// the penalties (logit-adjustments.ts), divided by the temperature, and
// restricted to the tokens a grammar allows at that point. At temperature 0
// (greedy) the temperature 1 distribution is reported, since the argmax of
// a degenerate one says nothing. Top-p is not applied: it renormalises the
// nucleus, and every token outside it would be -Infinity (docs/generation.md).
import type { Tokenizer, TokenLogprob, TopLogprob } from "../types.js";

// TokenLogprob and TopLogprob are part of the public contract (types.ts, GenerationChunk.logprob);
// exported here too for the modules that read them.
export type { TokenLogprob, TopLogprob } from "../types.js";

/** The most top_logprobs OpenAI allows. */
export const MAX_TOP_LOGPROBS = 20;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads logprobs from logits rows; one per Generator (it caches token texts). */
export class LogprobReader {
  private table: readonly (Uint8Array | null)[] | null = null;
  private readonly texts = new Map<number, TopLogprob>();

  constructor(private readonly tokenizer: Tokenizer) {}

  /**
   * The logprob of `tokenId` and the `top` most likely tokens, from `row`
   * [vocab] at `temperature`, among `allowed` only when given (a grammar's
   * tokens; every other token has probability 0).
   */
  read(
    row: Float32Array,
    temperature: number,
    allowed: readonly number[] | null,
    tokenId: number,
    top: number,
  ): TokenLogprob {
    const scale = temperature === 0 ? 1 : 1 / temperature;
    const count = allowed === null ? row.length : allowed.length;
    const idAt = allowed === null ? (i: number) => i : (i: number) => allowed[i];
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < count; i++) max = Math.max(max, row[idAt(i)] * scale);
    let sum = 0;
    for (let i = 0; i < count; i++) sum += Math.exp(row[idAt(i)] * scale - max);
    const logZ = max + Math.log(sum);
    const logprobOf = (id: number) => row[id] * scale - logZ;
    // The top `top` ids, kept sorted (logprob desc, id asc) by insertion: top <= 20.
    const best: number[] = [];
    const before = (a: number, b: number) =>
      logprobOf(a) > logprobOf(b) || (logprobOf(a) === logprobOf(b) && a < b);
    for (let i = 0; i < count && top > 0; i++) {
      const id = idAt(i);
      if (logprobOf(id) === Number.NEGATIVE_INFINITY) continue;
      if (best.length === top && !before(id, best[top - 1])) continue;
      let at = best.length < top ? best.length : top - 1;
      best[at] = id;
      while (at > 0 && before(best[at], best[at - 1])) {
        [best[at], best[at - 1]] = [best[at - 1], best[at]];
        at--;
      }
    }
    return {
      ...this.text(tokenId),
      logprob: logprobOf(tokenId),
      topLogprobs: best.map((id) => ({ ...this.text(id), logprob: logprobOf(id) })),
    };
  }

  /** A token's text and bytes (special tokens: their text as decoded with special tokens kept). */
  private text(id: number): Omit<TopLogprob, "logprob"> {
    let known = this.texts.get(id);
    if (known === undefined) {
      const bytes = this.bytes(id);
      let token: string;
      try {
        token = utf8.decode(bytes);
      } catch {
        token = `bytes:${Array.from(bytes, (b) => `\\x${b.toString(16).padStart(2, "0")}`).join("")}`;
      }
      known = { token, bytes: Array.from(bytes), logprob: 0 };
      this.texts.set(id, known);
    }
    return { token: known.token, bytes: [...known.bytes] };
  }

  private bytes(id: number): Uint8Array {
    if (this.table === null) {
      try {
        this.table = this.tokenizer.tokenBytes();
      } catch {
        this.table = []; // a decoder the byte table cannot read: decode each token instead
      }
    }
    return (
      this.table[id] ?? new TextEncoder().encode(this.tokenizer.decode([id], { skipSpecialTokens: false }))
    );
  }
}
