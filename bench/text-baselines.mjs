// Classifiers that take no neural network, for the real-task benchmark: the
// majority class, and a multinomial naive Bayes on a name's character n-grams.
// Examples are { name, label }; labels lists the classes.

/** The most frequent label of the train set. */
export function majority(trainSet, labels) {
  const counts = Object.fromEntries(labels.map((l) => [l, 0]));
  for (const e of trainSet) counts[e.label]++;
  return labels.reduce((best, l) => (counts[l] > counts[best] ? l : best), labels[0]);
}

/** Character n-grams (n = 1..4) of the lowercased name between boundary marks: the name's "bag of words". */
function ngrams(name) {
  const s = `^${name.toLowerCase()}$`;
  const out = [];
  for (let n = 1; n <= 4; n++) for (let i = 0; i + n <= s.length; i++) out.push(s.slice(i, i + n));
  return out;
}

/** Multinomial naive Bayes with add-alpha smoothing; n-grams never seen in training are ignored. */
export function naiveBayes(trainSet, labels, alpha = 1) {
  const vocab = new Set();
  const counts = Object.fromEntries(labels.map((l) => [l, new Map()]));
  const totals = Object.fromEntries(labels.map((l) => [l, 0]));
  const docs = Object.fromEntries(labels.map((l) => [l, 0]));
  for (const e of trainSet) {
    docs[e.label]++;
    for (const g of ngrams(e.name)) {
      vocab.add(g);
      counts[e.label].set(g, (counts[e.label].get(g) ?? 0) + 1);
      totals[e.label]++;
    }
  }
  const V = vocab.size;
  return {
    vocabulary: V,
    predict(name) {
      let best = null;
      let bestScore = Number.NEGATIVE_INFINITY;
      for (const l of labels) {
        let score = Math.log(docs[l] / trainSet.length);
        for (const g of ngrams(name)) {
          if (!vocab.has(g)) continue;
          score += Math.log(((counts[l].get(g) ?? 0) + alpha) / (totals[l] + alpha * V));
        }
        if (score > bestScore) [best, bestScore] = [l, score];
      }
      return best;
    },
  };
}
