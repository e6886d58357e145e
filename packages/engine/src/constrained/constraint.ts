// One request's grammar during generation: which tokens may come next, and
// sampling among them.
//
// Sampling first draws from the model's distribution as usual and checks only
// the drawn token (a walk over its few bytes); only when the grammar refuses
// it are the logits masked (a walk of the vocabulary trie) and the draw
// repeated. For temperature sampling without top-p this draws exactly from the
// masked distribution (P(t) = p(t) + P(refused) · p(t) / P(allowed)), and for
// greedy decoding the argmax is the allowed argmax; with top-p < 1 the mask
// comes first, so the nucleus is taken among the allowed tokens.
//
// Budget: a token is allowed only if the text can still be completed within
// the tokens left, counting one token per missing byte (every byte has its own
// token in a byte-level vocabulary). So the output closes in time whatever the
// model does, unless max_tokens is below the fewest bytes of a valid text.
import { EngineError } from "../errors.js";
import type { Rng } from "../rng.js";
import type { SamplingParams, TokenSampler } from "../sampling.js";
import { compileGrammar } from "./compile.js";
import type { OutputGrammar } from "./grammar.js";
import {
  advance,
  advanceBytes,
  canEnd,
  initialState,
  inPlainString,
  isFinal,
  minBytes,
  type State,
  stateKey,
} from "./matcher.js";
import type { GNode } from "./nodes.js";
import type { TrieNode, Vocabulary } from "./vocabulary.js";

/** The allowed tokens of one state, and for each the fewest bytes still due after it. */
interface Allowed {
  ids: Int32Array;
  mins: Int32Array;
  maxMin: number;
}

/** A walk's output while it grows. */
interface Collected {
  ids: number[];
  mins: number[];
  maxMin: number;
}

/** A compiled grammar with the allowed tokens of the states met so far (shared by requests with the same grammar). */
export interface CompiledGrammar {
  root: GNode;
  masks: Map<string, Allowed>;
}

/** Most token ids held in cached allowed sets per vocabulary (8 bytes each with their mins: 64 MB). */
const MAX_CACHED_IDS = 8_000_000;
const cachedIds = new WeakMap<Vocabulary, { count: number }>();
const MAX_GRAMMARS = 64;
const compiledByVocabulary = new WeakMap<Vocabulary, Map<string, CompiledGrammar>>();

/** Compiles a grammar, or reuses the compilation of an equal one for this vocabulary. */
export function compiledGrammarFor(grammar: OutputGrammar, vocabulary: Vocabulary): CompiledGrammar {
  let cache = compiledByVocabulary.get(vocabulary);
  if (!cache) {
    cache = new Map();
    compiledByVocabulary.set(vocabulary, cache);
  }
  const key = JSON.stringify(grammar);
  let compiled = cache.get(key);
  if (compiled) {
    cache.delete(key); // most recently used last
  } else {
    compiled = { root: compileGrammar(grammar), masks: new Map() };
    if (cache.size >= MAX_GRAMMARS) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, compiled);
  return compiled;
}

export class GrammarConstraint {
  private state: State;

  constructor(
    private readonly grammar: CompiledGrammar,
    private readonly vocabulary: Vocabulary,
    private readonly eos: ReadonlySet<number>,
  ) {
    this.state = initialState(grammar.root);
  }

  /** Whether the text is complete and nothing may follow (generation stops). */
  get finished(): boolean {
    return isFinal(this.state);
  }

  /** Whether the text so far is complete (end of sequence allowed). */
  get complete(): boolean {
    return canEnd(this.state);
  }

  /** Fewest bytes that complete the text. */
  get bytesToComplete(): number {
    return minBytes(this.state);
  }

  /** The byte budget after this token, given the tokens left including it (Infinity once it can no longer bind). */
  private budget(left: number): number {
    return minBytes(this.state) <= left ? left - 1 : Number.POSITIVE_INFINITY;
  }

  /** Whether `id` may be generated now with `left` tokens left (this one included). */
  allows(id: number, left: number): boolean {
    if (this.eos.has(id)) return canEnd(this.state);
    const bytes = this.vocabulary.tokenBytes[id];
    if (!bytes || bytes.length === 0) return false;
    const next = advanceBytes(this.state, bytes);
    return next.length > 0 && minBytes(next) <= this.budget(left);
  }

  /** Every id that may be generated now. */
  allowedIds(left: number): number[] {
    const allowed = this.allowedOfState();
    const budget = this.budget(left);
    const ids =
      allowed.maxMin <= budget
        ? Array.from(allowed.ids)
        : Array.from(allowed.ids).filter((_, i) => allowed.mins[i] <= budget);
    if (canEnd(this.state)) ids.push(...this.eos);
    return ids;
  }

  /** Draws the next token among the allowed ones (see the file comment). */
  sample(row: Float32Array, sampler: TokenSampler, params: SamplingParams, rng: Rng, left: number): number {
    if (params.temperature === 0 || params.topP >= 1) {
      const id = sampler.sample(row, params, rng);
      if (this.allows(id, left)) return id;
    }
    const ids = this.allowedIds(left);
    if (ids.length === 0) {
      throw new EngineError("invalid_argument", "no token of the vocabulary continues the grammar here");
    }
    return sampler.sampleAmong(row, ids, params, rng);
  }

  /** Moves past a generated token; returns whether the text is now final. */
  accept(id: number): boolean {
    if (this.eos.has(id)) return true;
    const bytes = this.vocabulary.tokenBytes[id];
    const next = bytes ? advanceBytes(this.state, bytes) : [];
    if (next.length === 0)
      throw new EngineError("invalid_argument", `token ${id} does not continue the grammar`);
    this.state = next;
    return isFinal(next);
  }

  /** Caches an allowed set; past the vocabulary's budget, every grammar's cache of it starts over. */
  private remember(key: string, allowed: Allowed): void {
    let used = cachedIds.get(this.vocabulary);
    if (!used) {
      used = { count: 0 };
      cachedIds.set(this.vocabulary, used);
    }
    if (used.count + allowed.ids.length > MAX_CACHED_IDS) {
      for (const grammar of compiledByVocabulary.get(this.vocabulary)?.values() ?? []) grammar.masks.clear();
      this.grammar.masks.clear();
      used.count = 0;
    }
    this.grammar.masks.set(key, allowed);
    used.count += allowed.ids.length;
  }

  private allowedOfState(): Allowed {
    const masks = this.grammar.masks;
    const key = stateKey(this.state);
    let allowed = masks.get(key);
    if (!allowed) {
      const collected: Collected = { ids: [], mins: [], maxMin: 0 };
      walk(this.vocabulary.trie, this.state, this.vocabulary.order, collected);
      allowed = {
        ids: Int32Array.from(collected.ids),
        mins: Int32Array.from(collected.mins),
        maxMin: collected.maxMin,
      };
      this.remember(key, allowed);
    }
    return allowed;
  }
}

function walk(node: TrieNode, state: State, order: Int32Array, out: Collected): void {
  const { bytes, children } = node;
  const plainString = inPlainString(state);
  for (let i = 0; i < bytes.length; i++) {
    const child = children[i];
    if (plainString && child.plain) {
      // the whole subtree stays inside the string: the state does not change
      const min = minBytes(state);
      if (min > out.maxMin) out.maxMin = min;
      for (let j = child.first; j < child.end; j++) {
        out.ids.push(order[j]);
        out.mins.push(min);
      }
      continue;
    }
    const next = advance(state, bytes[i]);
    if (next.length === 0) continue;
    if (child.tokens.length > 0) {
      const min = minBytes(next);
      if (min > out.maxMin) out.maxMin = min;
      for (const id of child.tokens) {
        out.ids.push(id);
        out.mins.push(min);
      }
    }
    if (child.children.length > 0) walk(child, next, order, out);
  }
}
