// What svc writes, for check_svc_artifacts.py to read with transformers and
// peft on a machine that has them: for every committed fixture, an adapter
// saved by saveAdapter (PEFT's kaiming A, a non-zero B, "all-linear" resolved
// by the engine), the merged folder exportModel writes for it, and the
// engine's own logits of base + adapter on the fixture's first sequence.
//
// Run after `npm run build`: node make_svc_artifacts.mjs OUT
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { exportModel, initLoraAdapter, loadModel, saveAdapter } from "../dist/src/index.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures");
const out = process.argv[2];
if (!out) {
  console.error("usage: node make_svc_artifacts.mjs OUT");
  process.exit(2);
}

for (const name of readdirSync(fixtures).sort()) {
  const base = join(fixtures, name);
  const golden = JSON.parse(readFileSync(join(base, "golden.json"), "utf8"));
  const ids = golden.input_ids[0].slice(0, golden.lengths[0]);
  const model = await loadModel(base);
  const adapter = initLoraAdapter(model.config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 7);
  // B = 0 would make the adapter the identity and prove nothing about its layout
  let k = 0;
  for (const [tensorName, t] of adapter.tensors) {
    if (!tensorName.includes(".lora_B.")) continue;
    for (let i = 0; i < t.length; i++) t[i] = 0.05 * Math.sin(1 + k++ * 0.7);
  }
  const dir = join(out, name);
  saveAdapter(adapter, join(dir, "adapter"), { baseModelName: name });
  await exportModel({
    baseDir: base,
    adapterDir: join(dir, "adapter"),
    format: "merged",
    quant: "f32",
    out: join(dir, "merged"),
  });
  const logits = model.withAdapter(adapter).logits(ids);
  writeFileSync(
    join(dir, "expected.json"),
    JSON.stringify({
      base: name,
      input_ids: ids,
      targets: adapter.spec.targetModules,
      logits_lora: Array.from(logits),
    }),
  );
  console.log(`${name}: ${adapter.spec.targetModules.join(",")}`);
}
