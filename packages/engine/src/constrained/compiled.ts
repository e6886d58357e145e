// Grammars compiled for one vocabulary, and the allowed tokens of the states
// met so far, both cached per vocabulary and both built a piece at a time
// (steps.ts): a schema of thousands of properties, or a state whose allowed
// tokens walk most of a 150k-token vocabulary, never holds the process in one
// piece. Requests with an equal grammar share its compilation, and sequences
// in the same state share its allowed set, even while it is being built.
import { compileGrammarSteps } from "./compile.js";
import type { OutputGrammar } from "./grammar.js";
import { advanceSteps, inPlainString, minBytes, type State, stateKey } from "./matcher.js";
import type { GNode } from "./nodes.js";
import { SharedWork, type Steps } from "./steps.js";
import type { TrieNode, Vocabulary } from "./vocabulary.js";

/** The allowed tokens of one state, and for each the fewest bytes still due after it. */
export interface Allowed {
  ids: Int32Array;
  mins: Int32Array;
  maxMin: number;
}

/** A compiled grammar with the allowed tokens of its states (shared by requests with the same grammar). */
export interface CompiledGrammar {
  root: GNode;
  masks: Map<string, Allowed>;
  /** Allowed sets being built, by state key. */
  building: Map<string, SharedWork<Allowed>>;
}

/** Most token ids held in cached allowed sets per vocabulary (8 bytes each with their mins: 64 MB). */
const MAX_CACHED_IDS = 8_000_000;
const MAX_GRAMMARS = 64;
/** Stacks advanced by one byte between two yields (a trie edge costs one per stack of its state): ~0.1 ms. */
const PIECE_STACKS = 512;

interface VocabularyCache {
  /** Compilations by the grammar's JSON, least recently used first. */
  grammars: Map<string, SharedWork<CompiledGrammar>>;
  /** Token ids held in the allowed sets of all of them. */
  cachedIds: number;
}
const caches = new WeakMap<Vocabulary, VocabularyCache>();

function cacheOf(vocabulary: Vocabulary): VocabularyCache {
  let cache = caches.get(vocabulary);
  if (!cache) {
    cache = { grammars: new Map(), cachedIds: 0 };
    caches.set(vocabulary, cache);
  }
  return cache;
}

/**
 * The compilation of a grammar for this vocabulary: the cached one of an
 * equal grammar (finished or still running), or new work. A compilation that
 * failed is not kept, so a later request compiles again.
 */
export function compiledGrammarWork(
  grammar: OutputGrammar,
  vocabulary: Vocabulary,
): SharedWork<CompiledGrammar> {
  const { grammars } = cacheOf(vocabulary);
  const key = JSON.stringify(grammar);
  let work = grammars.get(key);
  if (work && !work.failed) {
    grammars.delete(key); // most recently used last
  } else {
    work = new SharedWork(compileSteps(grammar));
    if (grammars.size >= MAX_GRAMMARS) grammars.delete(grammars.keys().next().value!);
  }
  grammars.set(key, work);
  return work;
}

function* compileSteps(grammar: OutputGrammar): Steps<CompiledGrammar> {
  return { root: yield* compileGrammarSteps(grammar), masks: new Map(), building: new Map() };
}

/** The allowed tokens of `state`: the cached set, or the shared work that builds (and then caches) it. */
export function allowedWork(
  grammar: CompiledGrammar,
  vocabulary: Vocabulary,
  state: State,
): SharedWork<Allowed> {
  const key = stateKey(state);
  const cached = grammar.masks.get(key);
  if (cached) return SharedWork.of(cached);
  let work = grammar.building.get(key);
  if (!work || work.failed) {
    work = new SharedWork(buildAllowed(grammar, vocabulary, state, key));
    grammar.building.set(key, work);
  }
  return work;
}

function* buildAllowed(
  grammar: CompiledGrammar,
  vocabulary: Vocabulary,
  state: State,
  key: string,
): Steps<Allowed> {
  const allowed = yield* walk(vocabulary.trie, state, vocabulary.order);
  grammar.building.delete(key);
  remember(grammar, vocabulary, key, allowed);
  return allowed;
}

/** Caches an allowed set; past the vocabulary's budget, every grammar's cache of it starts over. */
function remember(grammar: CompiledGrammar, vocabulary: Vocabulary, key: string, allowed: Allowed): void {
  const cache = cacheOf(vocabulary);
  if (cache.cachedIds + allowed.ids.length > MAX_CACHED_IDS) {
    for (const work of cache.grammars.values()) if (work.done && !work.failed) work.result.masks.clear();
    grammar.masks.clear();
    cache.cachedIds = 0;
  }
  grammar.masks.set(key, allowed);
  cache.cachedIds += allowed.ids.length;
}

/** A trie node being walked: the matcher state at it, and the next child to visit. */
interface WalkFrame {
  node: TrieNode;
  state: State;
  plainString: boolean;
  next: number;
}

/**
 * Every token the state allows: a depth-first walk of the trie (with an
 * explicit stack, so it can stop between any two edges), dropping a branch as
 * soon as the matcher refuses its prefix.
 */
function* walk(trie: TrieNode, state: State, order: Int32Array): Steps<Allowed> {
  const ids: number[] = [];
  const mins: number[] = [];
  let maxMin = 0;
  const stack: WalkFrame[] = [{ node: trie, state, plainString: inPlainString(state), next: 0 }];
  let stacks = 0;
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const { bytes, children } = top.node;
    if (top.next === bytes.length) {
      stack.pop();
      continue;
    }
    const i = top.next++;
    const child = children[i];
    if (top.plainString && child.plain) {
      // the whole subtree stays inside the string: the state does not change
      const min = minBytes(top.state);
      if (min > maxMin) maxMin = min;
      for (let j = child.first; j < child.end; j++) {
        ids.push(order[j]);
        mins.push(min);
      }
      continue;
    }
    stacks += top.state.length;
    if (stacks >= PIECE_STACKS) {
      stacks = 0;
      yield;
    }
    const next = yield* advanceSteps(top.state, bytes[i]);
    if (next.length === 0) continue;
    if (child.tokens.length > 0) {
      const min = minBytes(next);
      if (min > maxMin) maxMin = min;
      for (const id of child.tokens) {
        ids.push(id);
        mins.push(min);
      }
    }
    if (child.children.length > 0)
      stack.push({ node: child, state: next, plainString: inPlainString(next), next: 0 });
  }
  return { ids: Int32Array.from(ids), mins: Int32Array.from(mins), maxMin };
}
