// What each serving weight format costs in quality (docs/serving-formats.md),
// measured, against fp32 on the same weights:
//   - the bundled model (models/pico-llama): perplexity on held-out text it was
//     never trained on — the templates' eval sets rendered with its chat
//     template, and this repository's docs/ prose — in 256-token windows; the
//     change from fp32, the KL divergence from fp32's next-token distribution,
//     and how often the top token agrees; each format twice: the window in one
//     forward pass (prefill's path) and one token a step through the
//     BatchDecoder (decode's path); int8 and q4_0 round the activations to 8
//     bits up to kernels.quantInt8MaxRows rows (decode on native avx512vnni
//     and avx2, prefill too on avx512vnni);
//   - the benchmark shapes (bench/shapes.mjs, random weights): random weights
//     have no perplexity worth reading, so the logits' error against fp32 over
//     one 64-token sequence, prefill's and decode's paths: largest and RMS
//     error relative to the largest |logit|, and top-1 agreement.
//
//   npm run build && nice node bench/quant-quality.mjs [--shapes small,qwen] [--windows N]
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomModelWeights } from "@svc/engine/testing";
import { parseModelConfig } from "../packages/engine/dist/src/families/index.js";
import { BatchDecoder, createKvCache } from "../packages/engine/dist/src/generation/decode.js";
import { decodeWeightBytes } from "../packages/engine/dist/src/graph/frozen-weights.js";
import { ModelGraph } from "../packages/engine/dist/src/graph/model.js";
import { getKernels } from "../packages/engine/dist/src/kernels/index.js";
import { loadModel } from "../packages/engine/dist/src/loading/load.js";
import { servingWeights } from "../packages/engine/dist/src/loading/serving-weights.js";
import { WEIGHT_FORMATS } from "../packages/engine/dist/src/quant/formats.js";
import { Rng } from "../packages/engine/dist/src/rng.js";
import { SHAPES } from "./shapes.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WINDOW = 256;

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const shapes = flag("shapes", "small,qwen").split(",").filter(Boolean);
const maxWindows = Number(flag("windows", "24"));

/** log-softmax of one row, in float64. */
function logSoftmax(row) {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
}

const argmax = (row) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
};

/** Logits [T, V] of ids fed one token a step through the BatchDecoder: the decode path as served. */
function decodeLogits(weights, config, ids) {
  const decoder = new BatchDecoder(weights, config, ids.length);
  const cache = createKvCache(config, ids.length);
  const V = config.vocabSize;
  const out = new Float32Array(ids.length * V);
  for (let t = 0; t < ids.length; t++)
    out.set(decoder.step([{ cache, tokenIds: [ids[t]], lora: null, wantLogits: true }]), t * V);
  return out;
}

/** "int8" (prefill's path, whole window) and "int8 decode" (one token a step) for each format but fp32. */
const PATHS = WEIGHT_FORMATS.flatMap((f) => (f === "fp32" ? [f] : [f, `${f} decode`]));

/** Held-out token windows: the eval sets of templates/ (chat template) and docs/*.md, cut into WINDOW tokens. */
function heldOut(tokenizer) {
  const sets = {};
  const chats = [];
  for (const t of readdirSync(join(ROOT, "templates"), { withFileTypes: true })) {
    if (!t.isDirectory()) continue;
    for (const line of readFileSync(join(ROOT, "templates", t.name, "data/eval.jsonl"), "utf8").split("\n")) {
      if (line.trim())
        chats.push(...tokenizer.encode(tokenizer.applyChatTemplate(JSON.parse(line).messages)));
    }
  }
  sets["templates' eval sets"] = chats;
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => readFileSync(join(ROOT, "docs", f), "utf8"))
    .join("\n\n");
  sets["docs/ prose"] = tokenizer.encode(docs);
  const windows = {};
  for (const [name, ids] of Object.entries(sets)) {
    windows[name] = [];
    for (let at = 0; at + WINDOW <= ids.length && windows[name].length < maxWindows; at += WINDOW)
      windows[name].push(ids.slice(at, at + WINDOW));
  }
  return windows;
}

/** Perplexity, KL(fp32 ‖ format) and top-1 agreement over windows, per format. */
function perplexities(model) {
  const { config, weights } = model;
  const V = config.vocabSize;
  const windows = heldOut(model.tokenizer);
  const served = Object.fromEntries(WEIGHT_FORMATS.map((f) => [f, servingWeights(weights, config, f)]));
  const graphs = Object.fromEntries(
    WEIGHT_FORMATS.map((f) => [f, new ModelGraph(config, served[f], { inferenceOnly: true })]),
  );
  const logitsOf = (path, ids) => {
    const [f, decode] = path.split(" ");
    return decode ? decodeLogits(served[f], config, ids) : graphs[f].logits(ids, null);
  };
  const out = {};
  for (const [set, list] of Object.entries(windows)) {
    const acc = Object.fromEntries(PATHS.map((f) => [f, { nll: 0, kl: 0, agree: 0, n: 0 }]));
    for (const ids of list) {
      const logits = Object.fromEntries(PATHS.map((f) => [f, logitsOf(f, ids)]));
      for (let t = 0; t + 1 < ids.length; t++) {
        const ref = logSoftmax(logits.fp32.subarray(t * V, (t + 1) * V));
        const refTop = argmax(ref);
        for (const f of PATHS) {
          const lp = f === "fp32" ? ref : logSoftmax(logits[f].subarray(t * V, (t + 1) * V));
          const a = acc[f];
          a.nll -= lp[ids[t + 1]];
          let kl = 0;
          for (let v = 0; v < V; v++) kl += Math.exp(ref[v]) * (ref[v] - lp[v]);
          a.kl += kl;
          if (argmax(lp) === refTop) a.agree++;
          a.n++;
        }
      }
    }
    out[set] = { windows: list.length, tokens: list.length * (WINDOW - 1), formats: {} };
    for (const f of PATHS) {
      const a = acc[f];
      out[set].formats[f] = { ppl: Math.exp(a.nll / a.n), kl: a.kl / a.n, top1: a.agree / a.n };
    }
  }
  return out;
}

/** Logit error of each format against fp32 on one random 64-token sequence of a random-weight shape. */
function logitErrors(name) {
  const config = parseModelConfig(SHAPES[name].config);
  const weights = randomModelWeights(config, 1);
  const rng = new Rng(3);
  const ids = Array.from({ length: 64 }, () => rng.int(config.vocabSize));
  const V = config.vocabSize;
  const ref = new ModelGraph(config, weights, { inferenceOnly: true }).logits(ids, null);
  let mag = 0;
  for (const x of ref) mag = Math.max(mag, Math.abs(x));
  const out = {};
  for (const f of PATHS) {
    const [format, decode] = f.split(" ");
    const served = servingWeights(weights, config, format);
    const got = decode
      ? decodeLogits(served, config, ids)
      : new ModelGraph(config, served, { inferenceOnly: true }).logits(ids, null);
    let max = 0;
    let sq = 0;
    let agree = 0;
    for (let i = 0; i < ref.length; i++) {
      const d = Math.abs(got[i] - ref[i]);
      max = Math.max(max, d);
      sq += d * d;
    }
    for (let t = 0; t < ids.length; t++)
      if (argmax(got.subarray(t * V, (t + 1) * V)) === argmax(ref.subarray(t * V, (t + 1) * V))) agree++;
    out[f] = {
      mib: decodeWeightBytes(served) / 2 ** 20,
      maxRel: max / mag,
      rmsRel: Math.sqrt(sq / ref.length) / mag,
      top1: agree / ids.length,
    };
  }
  return out;
}

const kernels = getKernels();
console.log(
  `kernels: ${kernels.name} (${kernels.isa}); matmulQuant rounds activations to 8 bits up to ${kernels.quantInt8MaxRows ?? 0} rows`,
);
const pico = await loadModel(join(ROOT, "models/pico-llama"));
const ppl = perplexities(pico);
console.log("bundled model (models/pico-llama), held-out text in 256-token windows:");
for (const [set, r] of Object.entries(ppl)) {
  console.log(`  ${set}: ${r.windows} windows, ${r.tokens} predicted tokens`);
  const base = r.formats.fp32.ppl;
  for (const [f, m] of Object.entries(r.formats)) {
    const delta =
      f === "fp32" ? "" : ` (${m.ppl >= base ? "+" : ""}${((100 * (m.ppl - base)) / base).toFixed(2)}%)`;
    console.log(
      `    ${f.padEnd(11)} perplexity ${m.ppl.toFixed(3)}${delta}, KL from fp32 ${m.kl.toExponential(2)} nats/token, top-1 = fp32's ${(100 * m.top1).toFixed(1)}%`,
    );
  }
}
const errors = {};
for (const name of shapes) {
  errors[name] = logitErrors(name);
  console.log(`${name} (${SHAPES[name].note}, random weights), logits of 64 random tokens against fp32:`);
  for (const [f, e] of Object.entries(errors[name])) {
    console.log(
      `    ${f.padEnd(11)} ${e.mib.toFixed(0).padStart(5)} MiB read/token, max error ${e.maxRel.toExponential(2)}, RMS error ${e.rmsRel.toExponential(2)} of max |logit|, top-1 agreement ${(100 * e.top1).toFixed(1)}%`,
    );
  }
}
console.log(JSON.stringify({ ppl, errors }));
