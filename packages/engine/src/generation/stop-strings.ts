// Turning a stream of token ids into a stream of text that is safe to show:
// IncrementalDetokenizer never emits half of a multi-byte UTF-8 character, and
// StopStringFilter never emits text that might turn out to be (the start of) a
// stop string.
import type { Tokenizer } from "../types.js";

const REPLACEMENT_CHAR = "\uFFFD";

/**
 * Decodes generated ids incrementally. Each call decodes a short window: the
 * ids since the last emitted text plus the ids before them (`prefixStart`), so
 * the tokenizer sees enough context for spaces and merges, and diffs against
 * the window's already-emitted prefix. Text ending in U+FFFD is held back: the
 * bytes of a character are split over tokens and the rest is still to come.
 */
export class IncrementalDetokenizer {
  private readonly ids: number[] = [];
  private prefixStart = 0; // window start
  private readStart = 0; // ids before this are emitted

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly skipSpecialTokens = true,
  ) {}

  /** Adds one id; returns the text that became final (often "", never a partial character). */
  push(id: number): string {
    this.ids.push(id);
    const prefixText = this.decode(this.prefixStart, this.readStart);
    const fullText = this.decode(this.prefixStart, this.ids.length);
    if (fullText.length <= prefixText.length || fullText.endsWith(REPLACEMENT_CHAR)) return "";
    this.prefixStart = this.readStart;
    this.readStart = this.ids.length;
    return fullText.slice(prefixText.length);
  }

  /** The text still held back (at the end of a generation); may contain U+FFFD. */
  flush(): string {
    if (this.readStart === this.ids.length) return "";
    const prefixText = this.decode(this.prefixStart, this.readStart);
    const fullText = this.decode(this.prefixStart, this.ids.length);
    this.prefixStart = this.readStart;
    this.readStart = this.ids.length;
    return fullText.slice(prefixText.length);
  }

  private decode(start: number, end: number): string {
    if (start === end) return "";
    return this.tokenizer.decode(this.ids.slice(start, end), { skipSpecialTokens: this.skipSpecialTokens });
  }
}

export interface StopFilterOutput {
  /** Text safe to emit now. */
  text: string;
  /** A stop string was found: `text` is everything before it, and the generation ends. */
  stopped: boolean;
}

/**
 * Holds back the tail of the text that could still grow into a stop string,
 * and cuts the text at the first stop string found (which is never emitted).
 */
export class StopStringFilter {
  private held = "";
  private readonly stops: string[];
  private readonly longestStop: number;

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
    this.longestStop = this.stops.reduce((n, s) => Math.max(n, s.length), 0);
  }

  push(text: string): StopFilterOutput {
    if (this.stops.length === 0) return { text, stopped: false };
    const buffer = this.held + text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = buffer.indexOf(stop);
      if (at !== -1 && (cut === -1 || at < cut)) cut = at;
    }
    if (cut !== -1) {
      this.held = "";
      return { text: buffer.slice(0, cut), stopped: true };
    }
    const keep = this.pendingStart(buffer);
    this.held = buffer.slice(keep);
    return { text: buffer.slice(0, keep), stopped: false };
  }

  /** The held-back text, once no more text will come. */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** Start of the longest suffix of `buffer` that is the beginning of some stop string (buffer.length if none). */
  private pendingStart(buffer: string): number {
    for (let i = Math.max(0, buffer.length - this.longestStop + 1); i < buffer.length; i++) {
      const tail = buffer.slice(i);
      if (this.stops.some((stop) => stop.startsWith(tail))) return i;
    }
    return buffer.length;
  }
}
