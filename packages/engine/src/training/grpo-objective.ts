// GRPO's objective as pure functions (DeepSeekMath, Shao et al. 2024), for
// the trainer to call between generation and the backward pass:
//
//  - groupAdvantages: each completion's reward minus its group's mean,
//    optionally divided by the group's standard deviation (Bessel-corrected,
//    as torch.std and TRL) plus `eps`. A group whose rewards are all equal
//    has advantages of exactly 0 (not the rounding residue of r − mean) and
//    is marked zero: it contributes nothing to the loss, neither its tokens
//    to the normaliser nor its KL term (DAPO's rule: such a group carries no
//    learning signal).
//  - grpoLoss: per token, ratio = exp(logπθ − logπold), the clipped surrogate
//    −min(ratio·A, clip(ratio, 1 − ε_low, 1 + ε_high)·A) as in PPO, plus
//    β·k3 with k3 = exp(ref − θ) − (ref − θ) − 1, the KL estimator GRPO uses.
//    Normalised either per token (the default, as DAPO and TRL: the sum over
//    every kept completion token of the batch divided by their count) or per
//    sequence (GRPO's paper: each completion's token mean, averaged over the
//    completions). Returns the loss and, per token, d loss / d logπθ, so the
//    trainer can push those weights through the cross-entropy backward it
//    already has (as DPO does with its per-row weights).
// logπold defaults to logπθ (one update per generation: ratio 1, its
// gradient still flowing); the reference is needed only when β > 0.
import { EngineError } from "../errors.js";

export type GrpoNormalization = "token" | "sequence";
/** hyperparameters.normalization's values (grpoLoss says how each divides the loss; DEFAULT_GRPO's is "token"). */
export const GRPO_NORMALIZATIONS: readonly GrpoNormalization[] = ["token", "sequence"];

export interface GrpoSettings {
  /** ε_low: the ratio's lower clip is 1 − ε_low (default 0.2). */
  epsilon: number;
  /** ε_high: the upper clip is 1 + ε_high (default ε_low; DAPO's clip-higher raises it). */
  epsilonHigh: number;
  /** The KL penalty's weight (default 0: no reference pass; DeepSeekMath used 0.04). */
  beta: number;
  /** Divide advantages by the group's standard deviation (default true). */
  scaleRewards: boolean;
  normalization: GrpoNormalization;
}

export const DEFAULT_GRPO: GrpoSettings = {
  epsilon: 0.2,
  epsilonHigh: 0.2,
  beta: 0,
  scaleRewards: true,
  normalization: "token",
};

/** Added to a group's standard deviation before dividing (TRL's 1e-4). */
export const ADVANTAGE_EPS = 1e-4;

const invalid = (message: string): never => {
  throw new EngineError("invalid_argument", message);
};

export interface GroupAdvantages {
  /** One per completion, in the order of the rewards. */
  advantages: Float64Array;
  /** Per group: true when all its rewards are equal (it contributes nothing). */
  zeroGroups: boolean[];
}

/** Advantages within consecutive groups of `groupSize` completions; a reward that is not finite is refused by index. */
export function groupAdvantages(
  rewards: ArrayLike<number>,
  groupSize: number,
  scale = DEFAULT_GRPO.scaleRewards,
  eps = ADVANTAGE_EPS,
): GroupAdvantages {
  if (!Number.isInteger(groupSize) || groupSize < 2)
    invalid(`groupSize must be an integer >= 2 (got ${groupSize})`);
  if (rewards.length === 0 || rewards.length % groupSize !== 0)
    invalid(`${rewards.length} rewards do not make whole groups of ${groupSize}`);
  for (let i = 0; i < rewards.length; i++)
    if (!Number.isFinite(rewards[i]))
      invalid(`reward ${i} is ${rewards[i]}: every reward must be a finite number`);
  const advantages = new Float64Array(rewards.length);
  const zeroGroups: boolean[] = [];
  for (let start = 0; start < rewards.length; start += groupSize) {
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    let sum = 0;
    for (let i = start; i < start + groupSize; i++) {
      min = Math.min(min, rewards[i]);
      max = Math.max(max, rewards[i]);
      sum += rewards[i];
    }
    const zero = min === max;
    zeroGroups.push(zero);
    if (zero) continue; // exactly 0
    const mean = sum / groupSize;
    let squares = 0;
    for (let i = start; i < start + groupSize; i++) squares += (rewards[i] - mean) ** 2;
    const divisor = scale ? Math.sqrt(squares / (groupSize - 1)) + eps : 1;
    for (let i = start; i < start + groupSize; i++) advantages[i] = (rewards[i] - mean) / divisor;
  }
  return { advantages, zeroGroups };
}

/** One completion's tokens: the policy's log-probs of the sampled tokens, and those it needs besides. */
export interface CompletionLogProbs {
  /** log πθ(o_t | q, o_<t) per completion token. */
  logprobs: ArrayLike<number>;
  /** log πold per token (default: logprobs). */
  oldLogprobs?: ArrayLike<number>;
  /** log πref per token; required when β > 0. */
  refLogprobs?: ArrayLike<number>;
}

export interface GrpoLoss {
  loss: number;
  /** Per completion, per token: d loss / d logπθ (zeros for a dropped completion). */
  grads: Float64Array[];
  /** Mean k3 over the kept tokens (0 when β = 0 and no reference was given). */
  meanKl: number;
  /** Fraction of kept tokens whose clipped term was the smaller (no gradient through the ratio). */
  clipFraction: number;
  /** Kept completion tokens (the token normaliser). */
  tokens: number;
}

/**
 * GRPO's loss over a batch: `advantages[i]` for completion i, `keep[i]` false
 * for a completion of a zero group (groupAdvantages' zeroGroups), which then
 * adds nothing anywhere.
 */
export function grpoLoss(
  completions: readonly CompletionLogProbs[],
  advantages: ArrayLike<number>,
  keep: readonly boolean[],
  settings: GrpoSettings = DEFAULT_GRPO,
): GrpoLoss {
  const { epsilon, epsilonHigh, beta, normalization } = settings;
  if (!(epsilon >= 0 && epsilon < 1)) invalid(`epsilon must be in [0, 1) (got ${epsilon})`);
  if (!(epsilonHigh >= 0)) invalid(`epsilonHigh must be >= 0 (got ${epsilonHigh})`);
  if (!(beta >= 0 && Number.isFinite(beta))) invalid(`beta must be a finite number >= 0 (got ${beta})`);
  if (advantages.length !== completions.length || keep.length !== completions.length)
    invalid(`${completions.length} completions need as many advantages and keep flags`);
  let kept = 0;
  let tokens = 0;
  for (const [i, c] of completions.entries()) {
    const n = c.logprobs.length;
    if (c.oldLogprobs && c.oldLogprobs.length !== n)
      invalid(`completion ${i}: oldLogprobs has ${c.oldLogprobs.length} tokens, logprobs ${n}`);
    if (beta > 0 && c.refLogprobs?.length !== n)
      invalid(`completion ${i}: beta > 0 needs refLogprobs for each of its ${n} tokens`);
    if (keep[i] && n > 0) {
      kept++;
      tokens += n;
    }
  }
  const grads = completions.map((c) => new Float64Array(c.logprobs.length));
  let loss = 0;
  let klSum = 0;
  let clipped = 0;
  for (const [i, c] of completions.entries()) {
    const n = c.logprobs.length;
    if (!keep[i] || n === 0) continue;
    const scale = normalization === "token" ? 1 / tokens : 1 / (kept * n);
    const a = advantages[i];
    for (let t = 0; t < n; t++) {
      const lp = c.logprobs[t];
      const ratio = Math.exp(lp - (c.oldLogprobs ? c.oldLogprobs[t] : lp));
      const bounded = Math.min(Math.max(ratio, 1 - epsilon), 1 + epsilonHigh);
      const unclippedTerm = ratio * a;
      const clippedTerm = bounded * a;
      // the smaller term carries the gradient; a tie (ratio inside the clip range) is the ratio's
      const throughRatio = unclippedTerm <= clippedTerm;
      if (!throughRatio) clipped++;
      let value = -Math.min(unclippedTerm, clippedTerm);
      let grad = throughRatio ? -a * ratio : 0;
      if (c.refLogprobs) {
        const d = c.refLogprobs[t] - lp;
        const k3 = Math.exp(d) - d - 1;
        klSum += k3;
        value += beta * k3;
        grad += beta * (1 - Math.exp(d));
      }
      loss += value * scale;
      grads[i][t] = grad * scale;
    }
  }
  return {
    loss,
    grads,
    meanKl: tokens > 0 ? klSum / tokens : 0,
    clipFraction: tokens > 0 ? clipped / tokens : 0,
    tokens,
  };
}
