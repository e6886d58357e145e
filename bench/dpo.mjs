// DPO tokens/s against SFT tokens/s on the same sequences (issue 36): SFT trains
// on each pair's two conversations (prompt + chosen, prompt + rejected) as rows,
// DPO on the pairs, so both steps hold the same sequences and tokens. DPO's
// first epoch also runs the reference pass (the adapter off) once per pair;
// later epochs reuse the cached reference log-probabilities.
//
//   nice node bench/dpo.mjs [--model models/pico-llama] [--pairs 32] [--batch 4] [--words 40] [--epochs 2]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  loadModel,
  parsePreferenceDataset,
  train,
  trainPreference,
} from "../packages/engine/dist/src/index.js";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "models/pico-llama" },
    pairs: { type: "string", default: "32" },
    batch: { type: "string", default: "4" },
    words: { type: "string", default: "40" },
    epochs: { type: "string", default: "2" },
  },
});
const pairs = Number(values.pairs);
const batch = Number(values.batch);
const epochs = Number(values.epochs);
const words = (i, n) => Array.from({ length: n }, (_, k) => `word${(i * 7 + k) % 97}`).join(" ");
const rows = Array.from({ length: pairs }, (_, i) => ({
  prompt: `Question ${i}: ${words(i, Number(values.words))}?`,
  chosen: `Answer ${words(i + 1, 12)}.`,
  rejected: `No ${words(i + 2, 12)}.`,
}));
const preference = parsePreferenceDataset(rows.map((r) => JSON.stringify(r)).join("\n"));
const sft = rows.flatMap((r) => [
  { prompt: r.prompt, completion: r.chosen },
  { prompt: r.prompt, completion: r.rejected },
]);
const model = await loadModel(values.model);
const lora = { r: 16, alpha: 32, targetModules: ["all-linear"] };
const out = mkdtempSync(join(tmpdir(), "svc-bench-dpo-"));
const stepsPerEpoch = Math.ceil(pairs / batch);
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// SFT: 2 × batch rows per step, the same sequences as one DPO step of `batch` pairs
const sftRates = [];
await train({
  model,
  trainSet: sft,
  hyperparameters: { lora, batchSize: 2 * batch, numTrainEpochs: epochs, learningRate: 1e-4, seed: 1 },
  outputDir: join(out, "sft"),
  onProgress: (p) => void sftRates.push(p.tokensPerSecond),
});
const dpoRates = [];
await trainPreference({
  model,
  trainSet: preference,
  hyperparameters: { lora, batchSize: batch, numTrainEpochs: epochs, learningRate: 1e-4, seed: 1 },
  outputDir: join(out, "dpo"),
  onProgress: (p) => void dpoRates.push(p.tokensPerSecond),
});
rmSync(out, { recursive: true, force: true });
// the first step of each run warms up buffers: left out
const sftRate = median(sftRates.slice(1));
const dpoFirst = median(dpoRates.slice(1, stepsPerEpoch));
const dpoLater = median(dpoRates.slice(stepsPerEpoch));
console.log(
  `model ${values.model}, ${pairs} pairs, ${batch} pairs (${2 * batch} sequences) per step, ${epochs} epochs`,
);
console.log(
  `SFT                               ${sftRate.toFixed(0)} tok/s (median of ${sftRates.length - 1} steps)`,
);
console.log(
  `DPO, epoch 1 (+ reference pass)   ${dpoFirst.toFixed(0)} tok/s (${(dpoFirst / sftRate).toFixed(2)}x SFT)`,
);
if (epochs > 1)
  console.log(
    `DPO, later epochs (cached ref.)   ${dpoLater.toFixed(0)} tok/s (${(dpoLater / sftRate).toFixed(2)}x SFT)`,
  );
