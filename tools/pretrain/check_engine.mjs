// Loads a model folder with the svc engine (loadModel) and compares its chat-template
// tokens and logits with the PyTorch golden values export.py wrote.
//
// Usage: node tools/pretrain/check_engine.mjs [models/pico-llama] [tools/pretrain/golden.json]
import { readFileSync } from "node:fs";
import { loadModel } from "@svc/engine";

const [dir = "models/pico-llama", goldenPath = "tools/pretrain/golden.json"] = process.argv.slice(2);
const golden = JSON.parse(readFileSync(goldenPath, "utf8"));
const model = await loadModel(dir);

const rendered = model.tokenizer.applyChatTemplate(golden.messages, { addGenerationPrompt: true });
const ids = model.tokenizer.encode(rendered);
const sameIds = ids.length === golden.ids.length && ids.every((id, i) => id === golden.ids[i]);

const V = model.config.vocabSize;
const T = golden.ids.length;
const logits = model.logits(golden.ids);
let maxProbeDiff = 0;
let argmaxAgree = 0;
for (let t = 0; t < T; t++) {
  const row = logits.subarray(t * V, (t + 1) * V);
  golden.probe_ids.forEach((id, k) => {
    maxProbeDiff = Math.max(maxProbeDiff, Math.abs(row[id] - golden.probe_logits[t][k]));
  });
  let best = 0;
  for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
  if (best === golden.argmax[t]) argmaxAgree += 1;
}
const last = logits.subarray((T - 1) * V, T * V);
let maxLastDiff = 0;
for (let v = 0; v < V; v++) maxLastDiff = Math.max(maxLastDiff, Math.abs(last[v] - golden.last_logits[v]));

const report = {
  tokens: T,
  sameIdsAsPython: sameIds,
  argmaxAgree: `${argmaxAgree}/${T}`,
  maxAbsDiffProbeLogits: maxProbeDiff,
  maxAbsDiffLastLogits: maxLastDiff,
  eosTokenIds: model.tokenizer.eosTokenIds,
};
console.log(JSON.stringify(report));
const ok = sameIds && argmaxAgree === T && maxProbeDiff < 1e-3 && maxLastDiff < 1e-3;
process.exit(ok ? 0 : 1);
