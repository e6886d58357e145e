// Each metric on examples computed by hand from its definition (text-similarity.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GradeError } from "./grade-errors.js";
import {
  bleu,
  bleuTokens,
  fuzzyMatch,
  gleu,
  lcsLength,
  MAX_LCS_CELLS,
  rougeL,
  rougeN,
  rougeTokens,
  similarity,
} from "./text-similarity.js";

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} is not ${expected}`);

test("tokens: BLEU keeps case and splits punctuation off; ROUGE lower-cases and keeps letters and digits", () => {
  assert.deepEqual(bleuTokens("Hello, world! x2"), ["Hello", ",", "world", "!", "x2"]);
  assert.deepEqual(rougeTokens("Hello, World! x2"), ["hello", "world", "x2"]);
});

test("fuzzy_match: 2·LCS / (|a| + |b|) over characters", () => {
  close(fuzzyMatch("kitten", "sitting"), 8 / 13); // LCS "ittn"
  close(fuzzyMatch("abc", "abc"), 1);
  close(fuzzyMatch("", ""), 1);
  close(fuzzyMatch("abc", ""), 0);
  close(fuzzyMatch("ü€", "€"), 2 / 3); // code points, not UTF-16 units
});

test("bleu: clipped precisions, exp smoothing of a zero order, brevity penalty, effective order", () => {
  // 1-grams 5/6, 2-grams 3/5, 3-grams 1/4, 4-grams 0 of 3 → 1/(2·3); lengths equal: BP 1
  close(
    bleu("the cat sat on the mat", "the cat is on the mat"),
    (((((((5 / 6) * 3) / 5) * 1) / 4) * 1) / 6) ** 0.25,
  );
  // two tokens: orders 1 and 2 only, both 1; BP = exp(1 − 6/2)
  close(bleu("the cat", "the cat sat on the mat"), Math.exp(-2));
  // clipping: "the" counts once, as often as in the reference (1 of 3 unigrams); no bigram of 2 → 1/(2·2),
  // no trigram of 1 → 1/(4·1); longer than the reference: BP 1
  close(bleu("the the the", "the cat"), (((((1 / 3) * 1) / 4) * 1) / 4) ** (1 / 3));
  close(bleu("dog", "the cat"), 0);
  close(bleu("", "the cat"), 0);
  close(bleu("Hello, world!", "Hello, world!"), 1);
});

test("gleu: pooled 1..4-gram overlap over the larger of the two totals", () => {
  close(gleu("the cat sat on the mat", "the cat is on the mat"), 9 / 18);
  close(gleu("the cat", "the cat sat on the mat"), 3 / 18);
  close(gleu("", ""), 0);
});

test("rouge_n and rouge_l: F1 of clipped n-gram overlap and of the LCS", () => {
  close(rougeN("the cat sat", "The cat sat on the mat", 1), 2 / 3); // P 1, R 1/2
  close(rougeN("the cat sat", "the cat sat on the mat", 2), 4 / 7); // P 1, R 2/5
  close(rougeN("the cat sat", "the cat sat on the mat", 3), 0.4); // P 1, R 1/4
  close(rougeN("the cat sat", "the cat sat on the mat", 4), 0);
  close(rougeN("a b c d", "b a d c", 1), 1);
  close(rougeL("a b c d", "b a d c"), 0.5); // LCS 2
  close(rougeL("the cat sat", "the cat sat on the mat"), 2 / 3);
  close(similarity("rouge_5", "a b c d e", "a b c d e"), 1);
  close(similarity("rouge_l", "", "a"), 0);
});

test("a comparison too large to run is refused, never cut short", () => {
  const side = Math.ceil(Math.sqrt(MAX_LCS_CELLS)) + 1;
  const long = Array.from({ length: side }, (_, i) => i);
  assert.throws(
    () => lcsLength(long, long),
    (e) => e instanceof GradeError && e.code === "sample_too_large",
  );
});
