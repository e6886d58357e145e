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
// A turn (draw a token, move past it) runs a piece at a time (steps.ts): the
// allowed set of a state not met before is walked from the vocabulary trie,
// and a state of thousands of alternatives (a schema of as many optional
// properties) costs a millisecond per byte, so the Generator runs turns in
// slices between decode steps.
//
// Budget: a token is allowed only if the text can still be completed within
// the tokens left, counting one token per missing byte (every byte has its own
// token in a byte-level vocabulary). So the output closes in time whatever the
// model does, unless max_tokens is below the fewest bytes of a valid text.
import { EngineError } from "../errors.js";
import type { Rng } from "../rng.js";
import { type Allowed, allowedWork, type CompiledGrammar } from "./compiled.js";
import { advanceSteps, canEnd, initialState, isFinal, minBytes, type State } from "./matcher.js";
import { type SharedWork, type Steps, waitFor } from "./steps.js";
import type { Vocabulary } from "./vocabulary.js";

/** The parameters of a draw that a turn's choice of path depends on. */
export interface DrawParams {
  /** 0 = greedy. */
  readonly temperature: number;
  /** Nucleus mass in (0, 1]; 1 keeps the whole vocabulary. */
  readonly topP: number;
}

/**
 * What a turn draws tokens with. generation/sampling.ts's TokenSampler
 * implements it; it is declared here so the grammar depends on nothing in
 * generation (generation depends on the grammar, not the other way round).
 */
export interface TurnSampler {
  /** A draw from the whole row. */
  sample(row: Float32Array, params: DrawParams, rng: Rng): number;
  /** A draw among `ids` only, as sample() would draw with every other token at -Infinity. */
  sampleAmong(row: Float32Array, ids: readonly number[], params: DrawParams, rng: Rng): number;
}

/** What a turn drew: the token, and whether the text is now final (generation stops). */
export interface Turn {
  tokenId: number;
  final: boolean;
}

/** The logits row a turn draws from (replaced by a copy when the turn outlives the decode step's buffer). */
export interface RowHolder {
  row: Float32Array;
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

  /** The byte budget after this token, given the tokens left including it (Infinity once it can no longer bind). */
  private budget(left: number): number {
    return minBytes(this.state) <= left ? left - 1 : Number.POSITIVE_INFINITY;
  }

  /**
   * The state after token `id` with `left` tokens left (this one included),
   * or null when the grammar or the budget refuses it; end of sequence keeps the state.
   */
  private *after(id: number, left: number): Steps<State | null> {
    if (this.eos.has(id)) return canEnd(this.state) ? this.state : null;
    const bytes = this.vocabulary.tokenBytes[id];
    if (!bytes || bytes.length === 0) return null;
    let state = this.state;
    for (let i = 0; i < bytes.length && state.length > 0; i++) {
      yield; // a byte can take a state to thousands of stacks
      state = yield* advanceSteps(state, bytes[i]);
    }
    return state.length > 0 && minBytes(state) <= this.budget(left) ? state : null;
  }

  /** The allowed tokens of the current state: cached, or the shared work that builds them. */
  allowedWork(): SharedWork<Allowed> {
    return allowedWork(this.grammar, this.vocabulary, this.state);
  }

  /** The ids of an allowed set of the current state that fit the budget, end of sequence included when allowed. */
  private within(allowed: Allowed, left: number): number[] {
    const budget = this.budget(left);
    const ids =
      allowed.maxMin <= budget
        ? Array.from(allowed.ids)
        : Array.from(allowed.ids).filter((_, i) => allowed.mins[i] <= budget);
    if (canEnd(this.state)) ids.push(...this.eos);
    return ids;
  }

  /**
   * The tokens allowed next within the budget of `left` tokens, end of
   * sequence included where allowed: what a turn's draw is restricted to
   * (a token's logprobs are read over them; token-logprobs.ts).
   */
  *allowedIds(left: number): Steps<number[]> {
    return this.within(yield* waitFor(this.allowedWork()), left);
  }

  /**
   * Draws the next token among the allowed ones (see the file comment) from
   * `holder.row`, and moves past it, a piece at a time.
   */
  *turn(holder: RowHolder, sampler: TurnSampler, params: DrawParams, rng: Rng, left: number): Steps<Turn> {
    if (params.temperature === 0 || params.topP >= 1) {
      const id = sampler.sample(holder.row, params, rng);
      const next = yield* this.after(id, left);
      if (next !== null) return this.moveTo(id, next);
    }
    const ids = this.within(yield* waitFor(this.allowedWork()), left);
    if (ids.length === 0) {
      throw new EngineError("invalid_argument", "no token of the vocabulary continues the grammar here");
    }
    const id = sampler.sampleAmong(holder.row, ids, params, rng);
    const next = yield* this.after(id, left);
    if (next === null) throw new EngineError("invalid_argument", `token ${id} does not continue the grammar`);
    return this.moveTo(id, next);
  }

  private moveTo(id: number, next: State): Turn {
    if (this.eos.has(id)) return { tokenId: id, final: true };
    this.state = next;
    return { tokenId: id, final: isFinal(next) };
  }
}
