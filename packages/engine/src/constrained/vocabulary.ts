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

interface Building {
  children: Map<number, Building>;
  tokens: number[];
}

/** The tokenizer's vocabulary trie (cached per tokenizer). */
export function vocabularyOf(tokenizer: Tokenizer): Vocabulary {
  let vocabulary = vocabularies.get(tokenizer);
  if (vocabulary) return vocabulary;
  const tokenBytes = tokenizer.tokenBytes();
  const root: Building = { children: new Map(), tokens: [] };
  tokenBytes.forEach((bytes, id) => {
    if (bytes === null || bytes.length === 0) return;
    let at = root;
    for (const b of bytes) {
      let child = at.children.get(b);
      if (!child) {
        child = { children: new Map(), tokens: [] };
        at.children.set(b, child);
      }
      at = child;
    }
    at.tokens.push(id);
  });
  const order: number[] = [];
  const freeze = (node: Building, plain: boolean): TrieNode => {
    const first = order.length;
    order.push(...node.tokens);
    const bytes = [...node.children.keys()].sort((a, b) => a - b);
    const children = bytes.map((b) => freeze(node.children.get(b)!, plain && isPlainStringByte(b)));
    const allPlain = plain && children.every((child) => child.plain);
    return { bytes, children, tokens: node.tokens, first, end: order.length, plain: allPlain };
  };
  const trie = freeze(root, true);
  vocabulary = { tokenBytes, trie, order: Int32Array.from(order) };
  vocabularies.set(tokenizer, vocabulary);
  return vocabulary;
}
