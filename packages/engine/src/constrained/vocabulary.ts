// A tokenizer's vocabulary as a byte trie, built once per tokenizer: walking it
// with a matcher state visits each shared prefix once and drops a whole branch
// as soon as the matcher refuses its prefix. Tokens are numbered in trie order,
// so every subtree's tokens are one range of `order`; a subtree made only of
// plain string bytes (printable ASCII but `"` and `\`) is taken whole inside a
// JSON string without being walked. A 150k-token vocabulary takes about half
// a second to sort and build, so it is built a piece at a time (steps.ts).
import type { Tokenizer } from "../types.js";
import { finishWork, SharedWork, type Steps } from "./steps.js";

export interface TrieNode {
  /** Child bytes and nodes, in parallel. */
  bytes: number[];
  children: TrieNode[];
  /** Tokens whose bytes end here. */
  tokens: number[];
  /** The subtree's tokens: order[first .. end). */
  first: number;
  end: number;
  /** Whether every byte below this node (its own edge included) is a plain string byte. */
  plain: boolean;
}

export interface Vocabulary {
  /** Bytes of each id (null: never generated under a grammar). */
  readonly tokenBytes: readonly (Uint8Array | null)[];
  readonly trie: TrieNode;
  /** Token ids in trie order (see TrieNode.first). */
  readonly order: Int32Array;
}

const vocabularies = new WeakMap<Tokenizer, SharedWork<Vocabulary>>();
/** Tokens sorted, merged or put in the trie between two yields (about a millisecond). */
const PIECE_TOKENS = 2048;

/** A byte that leaves a JSON string's content as it is: printable ASCII except `"` and `\`. */
export function isPlainStringByte(b: number): boolean {
  return b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** The ids of the tokens with bytes, sorted by their bytes: runs sorted apart, then merged (bottom-up merge sort). */
function* sortedIds(tokenBytes: readonly (Uint8Array | null)[]): Steps<Int32Array> {
  const ids: number[] = [];
  tokenBytes.forEach((bytes, id) => {
    if (bytes !== null && bytes.length > 0) ids.push(id);
  });
  const before = (x: number, y: number) => compareBytes(tokenBytes[x]!, tokenBytes[y]!) || x - y;
  const n = ids.length;
  let from = new Int32Array(n);
  for (let lo = 0; lo < n; lo += PIECE_TOKENS) {
    yield;
    from.set(ids.slice(lo, lo + PIECE_TOKENS).sort(before), lo);
  }
  let to = new Int32Array(n);
  for (let width = PIECE_TOKENS; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        if ((k - lo) % PIECE_TOKENS === PIECE_TOKENS - 1) yield;
        to[k] = j >= hi || (i < mid && before(from[i], from[j]) <= 0) ? from[i++] : from[j++];
      }
    }
    [from, to] = [to, from];
  }
  return from;
}

/**
 * The trie, built from the tokens sorted by their bytes: a token's path
 * shares with the previous one their common prefix, so one pass over the
 * sorted list opens and closes the nodes in depth-first order (no per-node maps).
 */
function* buildTrie(
  tokenBytes: readonly (Uint8Array | null)[],
): Steps<{ trie: TrieNode; order: Int32Array }> {
  const order = yield* sortedIds(tokenBytes);
  const open = (first: number, edgePlain: boolean): TrieNode => ({
    bytes: [],
    children: [],
    tokens: [],
    first,
    end: first,
    plain: edgePlain,
  });
  const root = open(0, true);
  const path: TrieNode[] = [root]; // path[d]: the open node at depth d
  const close = (node: TrieNode, end: number): void => {
    node.end = end;
    node.plain &&= node.children.every((child) => child.plain);
  };
  let previous: Uint8Array | null = null;
  for (const [index, id] of order.entries()) {
    if (index % PIECE_TOKENS === PIECE_TOKENS - 1) yield;
    const bytes = tokenBytes[id]!;
    let common = 0;
    if (previous)
      while (common < Math.min(previous.length, bytes.length) && previous[common] === bytes[common]) common++;
    while (path.length - 1 > common) close(path.pop()!, index);
    for (let d = common; d < bytes.length; d++) {
      const parent = path[path.length - 1];
      const child = open(index, parent.plain && isPlainStringByte(bytes[d]));
      parent.bytes.push(bytes[d]);
      parent.children.push(child);
      path.push(child);
    }
    path[path.length - 1].tokens.push(id);
    previous = bytes;
  }
  while (path.length > 0) close(path.pop()!, order.length);
  return { trie: root, order };
}

/** The building of the tokenizer's vocabulary trie, shared by every request on the tokenizer (cached per tokenizer). */
export function vocabularyWork(tokenizer: Tokenizer): SharedWork<Vocabulary> {
  let work = vocabularies.get(tokenizer);
  if (!work || work.failed) {
    work = new SharedWork(vocabularySteps(tokenizer));
    vocabularies.set(tokenizer, work);
  }
  return work;
}

function* vocabularySteps(tokenizer: Tokenizer): Steps<Vocabulary> {
  yield;
  const tokenBytes = tokenizer.tokenBytes();
  return { tokenBytes, ...(yield* buildTrie(tokenBytes)) };
}

/** The tokenizer's vocabulary trie, built at once if it is not yet. */
export function vocabularyOf(tokenizer: Tokenizer): Vocabulary {
  return finishWork(vocabularyWork(tokenizer));
}
