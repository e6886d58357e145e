// text_similarity's metrics, each written from its definition (no library):
//  - fuzzy_match: the normalised Indel similarity of the two texts' characters
//    (rapidfuzz's fuzz.ratio / 100): 2·LCS / (|input| + |reference|), 1 for two empty texts;
//  - bleu: sentence BLEU (Papineni et al. 2002) of the input against the reference:
//    clipped n-gram precisions for n = 1..4, uniform weights, the brevity penalty,
//    and sacreBLEU's sentence defaults: "exp" smoothing (a zero count's precision is
//    1 / (2^k · total), k counting the zero orders so far; Chen & Cherry 2014 method 3),
//    the effective order (orders the input is too short for are left out), 0 when
//    no unigram matches. Tokens are words and single punctuation marks, case kept;
//  - gleu: Google-BLEU (Wu et al. 2016): all 1..4-grams pooled, min(precision, recall);
//  - rouge_1 … rouge_5: ROUGE-N F1 (Lin 2004), clipped n-gram overlap;
//  - rouge_l: ROUGE-L F1 from the longest common subsequence of tokens.
//    ROUGE's tokens are as Google's rouge-score makes them: lower case, runs of
//    letters and digits, no stemming.
// Every metric gives a number in [0, 1]. cosine (an embedding model) and meteor
// (WordNet synonyms and a stemmer) are refused by name (grader-schema.ts).
import { GradeError } from "./grade-errors.js";

export const SIMILARITY_METRICS = [
  "fuzzy_match",
  "bleu",
  "gleu",
  "rouge_1",
  "rouge_2",
  "rouge_3",
  "rouge_4",
  "rouge_5",
  "rouge_l",
] as const;
export type SimilarityMetric = (typeof SIMILARITY_METRICS)[number];

export const UNSERVED_METRICS: Record<string, string> = {
  cosine: "it needs an embedding model (OpenAI's text-embedding-3-large), which svc does not serve",
  meteor: "it needs WordNet's synonyms and a stemmer, which svc does not ship",
};

/** Most cells a longest-common-subsequence table may have (~16 M: tens of milliseconds). */
export const MAX_LCS_CELLS = 16_000_000;

/** BLEU's tokens: words (letters, digits, _) and single punctuation marks, case kept. */
export const bleuTokens = (text: string): string[] => text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? [];

/** ROUGE's tokens: lower-cased runs of letters and digits. */
export const rougeTokens = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** Each n-gram of the tokens and how often it occurs. */
function ngrams(tokens: readonly string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i++) {
    const key = tokens.slice(i, i + n).join("\u0000");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Occurrences of the candidate's n-grams, each clipped to its count in the reference. */
function clippedOverlap(candidate: Map<string, number>, reference: Map<string, number>): number {
  let overlap = 0;
  for (const [key, count] of candidate) overlap += Math.min(count, reference.get(key) ?? 0);
  return overlap;
}

const f1 = (overlap: number, candidateTotal: number, referenceTotal: number): number => {
  if (overlap === 0 || candidateTotal === 0 || referenceTotal === 0) return 0;
  const p = overlap / candidateTotal;
  const r = overlap / referenceTotal;
  return (2 * p * r) / (p + r);
};

/** The length of the longest common subsequence (two rows of the table). */
export function lcsLength<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length * b.length > MAX_LCS_CELLS)
    throw new GradeError(
      "sample_too_large",
      "model_sample",
      `the texts are too long to compare (${a.length} × ${b.length} > ${MAX_LCS_CELLS} cells)`,
    );
  let prev = new Int32Array(b.length + 1);
  let row = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++)
      row[j] = a[i - 1] === b[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], row[j - 1]);
    [prev, row] = [row, prev];
  }
  return prev[b.length];
}

export function fuzzyMatch(input: string, reference: string): number {
  const a = [...input];
  const b = [...reference];
  if (a.length + b.length === 0) return 1;
  return (2 * lcsLength(a, b)) / (a.length + b.length);
}

export function bleu(input: string, reference: string, maxOrder = 4): number {
  const hyp = bleuTokens(input);
  const ref = bleuTokens(reference);
  if (hyp.length === 0) return 0;
  const logPrecisions: number[] = [];
  let zeros = 0;
  for (let n = 1; n <= maxOrder; n++) {
    const total = hyp.length - n + 1;
    if (total <= 0) break; // the effective order
    const matches = clippedOverlap(ngrams(hyp, n), ngrams(ref, n));
    if (n === 1 && matches === 0) return 0;
    if (matches === 0) zeros++;
    logPrecisions.push(Math.log(matches > 0 ? matches / total : 1 / (2 ** zeros * total)));
  }
  const brevity = hyp.length > ref.length ? 1 : Math.exp(1 - ref.length / hyp.length);
  return brevity * Math.exp(logPrecisions.reduce((s, x) => s + x, 0) / logPrecisions.length);
}

export function gleu(input: string, reference: string, maxOrder = 4): number {
  const hyp = bleuTokens(input);
  const ref = bleuTokens(reference);
  let overlap = 0;
  let hypTotal = 0;
  let refTotal = 0;
  for (let n = 1; n <= maxOrder; n++) {
    const h = ngrams(hyp, n);
    overlap += clippedOverlap(h, ngrams(ref, n));
    hypTotal += Math.max(0, hyp.length - n + 1);
    refTotal += Math.max(0, ref.length - n + 1);
  }
  const denominator = Math.max(hypTotal, refTotal);
  return denominator === 0 ? 0 : overlap / denominator;
}

export function rougeN(input: string, reference: string, n: number): number {
  const hyp = rougeTokens(input);
  const ref = rougeTokens(reference);
  const h = ngrams(hyp, n);
  return f1(
    clippedOverlap(h, ngrams(ref, n)),
    Math.max(0, hyp.length - n + 1),
    Math.max(0, ref.length - n + 1),
  );
}

export function rougeL(input: string, reference: string): number {
  const hyp = rougeTokens(input);
  const ref = rougeTokens(reference);
  return f1(lcsLength(hyp, ref), hyp.length, ref.length);
}

export function similarity(metric: SimilarityMetric, input: string, reference: string): number {
  switch (metric) {
    case "fuzzy_match":
      return fuzzyMatch(input, reference);
    case "bleu":
      return bleu(input, reference);
    case "gleu":
      return gleu(input, reference);
    case "rouge_l":
      return rougeL(input, reference);
    default:
      return rougeN(input, reference, Number(metric.slice("rouge_".length)));
  }
}
