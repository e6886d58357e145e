// A tokenizer's vocabulary as a byte trie, built once per tokenizer: walking it
// with a matcher state visits each shared prefix once and drops a whole branch
// as soon as the matcher refuses its prefix. Tokens are numbered in trie order,
// so every subtree's tokens are one range of `order`; a subtree made only of
// plain string bytes (printable ASCII but `"` and `\`) is taken whole inside a
// JSON string without being walked.
import type { Tokenizer } from "../types.js";

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

const vocabularies = new WeakMap<Tokenizer, Vocabulary>();

/** A byte that leaves a JSON string's content as it is: printable ASCII except `"` and `\`. */
export function isPlainStringByte(b: number): boolean {
  return b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/**
 * The trie, built from the tokens sorted by their bytes: a token's path
 * shares with the previous one their common prefix, so one pass over the
 * sorted list opens and closes the nodes in depth-first order (no per-node
 * maps: a 150k-token vocabulary builds in a fraction of a second).
 */
function buildTrie(tokenBytes: readonly (Uint8Array | null)[]): { trie: TrieNode; order: Int32Array } {
  const ids: number[] = [];
  tokenBytes.forEach((bytes, id) => {
    if (bytes !== null && bytes.length > 0) ids.push(id);
  });
  ids.sort((x, y) => compareBytes(tokenBytes[x]!, tokenBytes[y]!) || x - y);
  const order = Int32Array.from(ids);
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
  ids.forEach((id, index) => {
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
  });
  while (path.length > 0) close(path.pop()!, ids.length);
  return { trie: root, order };
}

/** The tokenizer's vocabulary trie (cached per tokenizer). */
export function vocabularyOf(tokenizer: Tokenizer): Vocabulary {
  let vocabulary = vocabularies.get(tokenizer);
  if (vocabulary) return vocabulary;
  const tokenBytes = tokenizer.tokenBytes();
  vocabulary = { tokenBytes, ...buildTrie(tokenBytes) };
  vocabularies.set(tokenizer, vocabulary);
  return vocabulary;
}
