// GRPO step time split into generation, scoring and update (issue 36), on the
// engine with a cheap reward (a substring check, as a string_check grader),
// so scoring is the callback's own cost: what a step spends sampling the
// groups with the batched generator against the policy-gradient update.
//
//   nice node bench/grpo.mjs [--model models/pico-llama] [--prompts 4] [--generations 8] [--tokens 32] [--steps 6] [--beta 0]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadModel, trainGrpo } from "../packages/engine/dist/src/index.js";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "models/pico-llama" },
    prompts: { type: "string", default: "4" },
    generations: { type: "string", default: "8" },
    tokens: { type: "string", default: "32" },
    steps: { type: "string", default: "6" },
    beta: { type: "string", default: "0" },
  },
});
const prompts = Number(values.prompts);
const topics = ["the sea", "a dog", "the king", "a city", "the rain", "a ship", "the war", "a tree"];
const rows = topics.map((t) => ({ messages: [{ role: "user", content: `Write about ${t}.` }] }));
const model = await loadModel(values.model);
const out = mkdtempSync(join(tmpdir(), "svc-bench-grpo-"));
const steps = [];
await trainGrpo({
  model,
  trainSet: rows,
  outputDir: out,
  score: (batch) => batch.map((item) => [item.completion.includes(" the ") ? 1 : 0]),
  hyperparameters: {
    lora: { r: 16, alpha: 32, targetModules: ["all-linear"] },
    batchSize: prompts,
    gradientAccumulationSteps: 1,
    learningRate: 1e-3,
    maxSteps: Number(values.steps),
    numGenerations: Number(values.generations),
    maxCompletionTokens: Number(values.tokens),
    beta: Number(values.beta),
    seed: 1,
  },
  onProgress: (p) =>
    steps.push({ ...p.timing, tokens: p.grpo.completionLength * prompts * Number(values.generations) }),
});
rmSync(out, { recursive: true, force: true });
// the first step warms the kernels and packs the weights: report the rest
const timed = steps.slice(1);
const mean = (key) => timed.reduce((s, t) => s + t[key], 0) / timed.length;
const [g, s, u, tokens] = ["generation", "scoring", "update", "tokens"].map(mean);
const total = g + s + u;
const pct = (x) => `${((100 * x) / total).toFixed(0)}%`;
console.log(
  `GRPO step (${prompts} prompts x ${values.generations} completions, up to ${values.tokens} tokens, beta ${values.beta}; mean of steps 2-${steps.length}):`,
);
console.log(`  generation ${(g * 1000).toFixed(0)} ms (${pct(g)}, ${(tokens / g).toFixed(0)} sampled tok/s)`);
console.log(`  scoring    ${(s * 1000).toFixed(1)} ms (${pct(s)})`);
console.log(
  `  update     ${(u * 1000).toFixed(0)} ms (${pct(u)}, ${(tokens / u).toFixed(0)} completion tok/s)`,
);
console.log(`  step       ${(total * 1000).toFixed(0)} ms, ${tokens.toFixed(0)} completion tokens`);
