// Preference losses on one pair's sequence log-probabilities (summed over the
// answer tokens), and their derivatives with respect to those log-probabilities.
//
// DPO (Rafailov et al. 2023, eq. 7), "sigmoid":
//   h = (log πθ(yw|x) − log πref(yw|x)) − (log πθ(yl|x) − log πref(yl|x)),  z = β·h
//   loss = −log σ(z)
// SimPO (Meng et al. 2024, eq. 6), "simpo", reference-free with length-normalised rewards:
//   z = β/|yw|·log πθ(yw|x) − β/|yl|·log πθ(yl|x) − γ
//   loss = −log σ(z)
// Label smoothing ε (conservative DPO, Mitchell 2023; TRL's label_smoothing) on
// either: loss = (1−ε)·(−log σ(z)) + ε·(−log σ(−z)), so dloss/dz = −(1−ε)·σ(−z) + ε·σ(z).
//
// The rewards logged are β·(log πθ − log πref) per answer for DPO (the paper's
// implicit reward) and β/|y|·log πθ(y|x) for SimPO; the margin is chosen minus
// rejected, and a pair counts as accurate when the chosen reward is the larger
// (half when they tie).
import { allowedValues, EngineError } from "../errors.js";

export const PREFERENCE_LOSSES = ["sigmoid", "simpo"] as const;
export type PreferenceLossType = (typeof PREFERENCE_LOSSES)[number];

/** The preference hyperparameters of a DPO job (camelCase as the wire carries them). */
export interface PreferenceHyperparameters {
  /** "sigmoid" (DPO, default) or "simpo" (reference-free). */
  loss?: PreferenceLossType;
  /** The temperature β: default 0.1 for sigmoid, 2.0 for simpo. */
  beta?: number;
  /** ε in [0, 0.5]: the share of pairs taken as mislabelled (default 0; TRL's range). */
  labelSmoothing?: number;
  /** SimPO's target reward margin γ ≥ 0 (default 0.5); only with loss "simpo". */
  gamma?: number;
}

export interface PreferenceSettings {
  loss: PreferenceLossType;
  beta: number;
  labelSmoothing: number;
  gamma: number;
}

export const DEFAULT_BETA: Record<PreferenceLossType, number> = { sigmoid: 0.1, simpo: 2.0 };
export const DEFAULT_SIMPO_GAMMA = 0.5;

/** Defaults applied and every value checked; a bad one is an EngineError naming the field. */
export function resolvePreference(h: PreferenceHyperparameters): PreferenceSettings {
  const bad = (field: string, want: string, value: unknown) =>
    new EngineError(
      "invalid_argument",
      `hyperparameters.${field} must be ${want} (got ${JSON.stringify(value)})`,
    );
  const loss = h.loss ?? "sigmoid";
  if (!PREFERENCE_LOSSES.includes(loss)) throw bad("loss", allowedValues(PREFERENCE_LOSSES), h.loss);
  const beta = h.beta ?? DEFAULT_BETA[loss];
  if (typeof beta !== "number" || !Number.isFinite(beta) || beta <= 0)
    throw bad("beta", "a number > 0", h.beta);
  const labelSmoothing = h.labelSmoothing ?? 0;
  if (typeof labelSmoothing !== "number" || !(labelSmoothing >= 0 && labelSmoothing <= 0.5)) {
    throw bad("labelSmoothing", "a number in [0, 0.5]", h.labelSmoothing);
  }
  if (h.gamma !== undefined && loss !== "simpo") throw bad("gamma", 'set only with loss "simpo"', h.gamma);
  const gamma = h.gamma ?? DEFAULT_SIMPO_GAMMA;
  if (typeof gamma !== "number" || !Number.isFinite(gamma) || gamma < 0)
    throw bad("gamma", "a number ≥ 0", h.gamma);
  return { loss, beta, labelSmoothing, gamma: loss === "simpo" ? gamma : 0 };
}

/** One pair's log-probabilities, summed over each answer's tokens, and the answers' token counts. */
export interface PairLogProbs {
  policyChosen: number;
  policyRejected: number;
  /** The reference (adapter off); unused by SimPO. */
  referenceChosen: number;
  referenceRejected: number;
  chosenTokens: number;
  rejectedTokens: number;
}

export interface PairLoss {
  loss: number;
  chosenReward: number;
  rejectedReward: number;
  /** dloss/d log πθ(yw|x) and dloss/d log πθ(yl|x). */
  dChosen: number;
  dRejected: number;
}

/** log σ(x) without overflow. */
export function logSigmoid(x: number): number {
  return x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x));
}

export function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

export function pairLoss(p: PairLogProbs, s: PreferenceSettings): PairLoss {
  let chosenReward: number;
  let rejectedReward: number;
  let dzChosen: number; // dz/d log πθ(yw|x)
  let dzRejected: number;
  if (s.loss === "simpo") {
    chosenReward = (s.beta / p.chosenTokens) * p.policyChosen;
    rejectedReward = (s.beta / p.rejectedTokens) * p.policyRejected;
    dzChosen = s.beta / p.chosenTokens;
    dzRejected = -s.beta / p.rejectedTokens;
  } else {
    chosenReward = s.beta * (p.policyChosen - p.referenceChosen);
    rejectedReward = s.beta * (p.policyRejected - p.referenceRejected);
    dzChosen = s.beta;
    dzRejected = -s.beta;
  }
  const z = chosenReward - rejectedReward - s.gamma;
  const e = s.labelSmoothing;
  const loss = -(1 - e) * logSigmoid(z) - e * logSigmoid(-z);
  const dz = -(1 - e) * sigmoid(-z) + e * sigmoid(z);
  return { loss, chosenReward, rejectedReward, dChosen: dz * dzChosen, dRejected: dz * dzRejected };
}

/** Per-step (or eval) means over pairs: what training.log reports for a DPO job. */
export interface PreferenceMetrics {
  loss: number;
  chosenReward: number;
  rejectedReward: number;
  margin: number;
  accuracy: number;
  pairs: number;
}

export class PreferenceMeter {
  private n = 0;
  private loss = 0;
  private chosen = 0;
  private rejected = 0;
  private hits = 0;

  add(l: PairLoss): void {
    this.n++;
    this.loss += l.loss;
    this.chosen += l.chosenReward;
    this.rejected += l.rejectedReward;
    // a tie (a fresh adapter: every DPO reward is 0) counts as half, so an untrained policy scores chance
    if (l.chosenReward > l.rejectedReward) this.hits++;
    else if (l.chosenReward === l.rejectedReward) this.hits += 0.5;
  }

  result(): PreferenceMetrics {
    const n = this.n || 1;
    return {
      loss: this.loss / n,
      chosenReward: this.chosen / n,
      rejectedReward: this.rejected / n,
      margin: (this.chosen - this.rejected) / n,
      accuracy: this.hits / n,
      pairs: this.n,
    };
  }
}
