// saveAdapter writes what peft itself writes. fixtures-transformers/ holds, for
// every family, an adapter that peft 0.21 saved over a model transformers 5
// saved (reference/check_transformers.py); the engine's own adapter for the
// same model and the same targets must have the same tensor names, shapes and
// dtype, and the same values for the adapter_config.json keys that change
// what peft computes. (That peft reads svc's adapters with the engine's
// logits was checked on that machine too: reference/check_svc_artifacts.py.)
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { initLoraAdapter } from "../src/adapters/lora.js";
import { saveAdapter } from "../src/adapters/peft.js";
import { loadModel } from "../src/loading/load.js";
import { readSafetensors } from "../src/loading/safetensors.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "fixtures-transformers");
// Keys of adapter_config.json that change what peft computes; the rest are
// bookkeeping (peft_version, base_model_name_or_path, ...) or off by default.
const COMPUTING_KEYS = [
  "peft_type",
  "task_type",
  "r",
  "lora_alpha",
  "bias",
  "fan_in_fan_out",
  "use_dora",
  "use_rslora",
  "modules_to_save",
  "layers_to_transform",
  "rank_pattern",
  "alpha_pattern",
];

const layoutOf = (file: string) =>
  [...readSafetensors(file).tensors].map(([name, t]) => `${name} ${t.dtype} [${t.shape.join(",")}]`).sort();

describe("svc's adapters have peft's own layout, family by family", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-peft-layout-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  const cases = readdirSync(fixtures, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  for (const name of cases.map((entry) => entry.name).sort()) {
    it(name, async () => {
      const base = join(fixtures, name);
      const peft = JSON.parse(readFileSync(join(base, "adapter", "adapter_config.json"), "utf8"));
      const model = await loadModel(base);
      // peft saved the "all-linear" it resolved as full module paths
      const modules = [
        ...new Set((peft.target_modules as string[]).map((p) => p.split(".").at(-1) as string)),
      ];
      const adapter = initLoraAdapter(
        model.config,
        { r: peft.r, alpha: peft.lora_alpha, targetModules: modules },
        1,
      );
      const out = join(root, name);
      saveAdapter(adapter, out);

      assert.deepEqual(
        layoutOf(join(out, "adapter_model.safetensors")),
        layoutOf(join(base, "adapter", "adapter_model.safetensors")),
      );
      const ours = JSON.parse(readFileSync(join(out, "adapter_config.json"), "utf8"));
      for (const key of COMPUTING_KEYS) assert.deepEqual(ours[key], peft[key], key);
      assert.deepEqual([...ours.target_modules].sort(), [...modules].sort());
    });
  }
});
