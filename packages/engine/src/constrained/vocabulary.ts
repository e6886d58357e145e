// A tokenizer's vocabulary as a byte trie, built once per tokenizer: walking it
// with a matcher state visits each shared prefix once and drops a whole branch
// as soon as the matcher refuses its prefix.
import type { Tokenizer } from "../types.js";

export interface TrieNode {
  /** Child bytes and nodes, in parallel. */
  bytes: number[];
  children: TrieNode[];
  /** Tokens whose bytes end here. */
  tokens: number[];
}

export interface Vocabulary {
  /** Bytes of each id (null: never generated under a grammar). */
  readonly tokenBytes: readonly (Uint8Array | null)[];
  readonly trie: TrieNode;
}

const vocabularies = new WeakMap<Tokenizer, Vocabulary>();

function node(): TrieNode {
  return { bytes: [], children: [], tokens: [] };
}

/** The tokenizer's vocabulary trie (cached per tokenizer). */
export function vocabularyOf(tokenizer: Tokenizer): Vocabulary {
  let vocabulary = vocabularies.get(tokenizer);
  if (vocabulary) return vocabulary;
  const tokenBytes = tokenizer.tokenBytes();
  const trie = node();
  tokenBytes.forEach((bytes, id) => {
    if (bytes === null || bytes.length === 0) return;
    let at = trie;
    for (const b of bytes) {
      const i = at.bytes.indexOf(b);
      if (i >= 0) {
        at = at.children[i];
      } else {
        const child = node();
        at.bytes.push(b);
        at.children.push(child);
        at = child;
      }
    }
    at.tokens.push(id);
  });
  vocabulary = { tokenBytes, trie };
  vocabularies.set(tokenizer, vocabulary);
  return vocabulary;
}
