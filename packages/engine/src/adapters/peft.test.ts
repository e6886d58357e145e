import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import { readSafetensors, writeSafetensors } from "../loading/safetensors.js";
import { smallTestConfig } from "../testing/random-weights.js";
import { initLoraAdapter, loraLayersOf } from "./lora.js";
import { loadAdapter, saveAdapter } from "./peft.js";

const config = smallTestConfig({
  hiddenSize: 12,
  intermediateSize: 20,
  numAttentionHeads: 3,
  numKeyValueHeads: 1,
  headDim: 4,
  vocabSize: 30,
  maxPositionEmbeddings: 64,
});

test("adapters are saved in PEFT's layout and load back identically", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-peft-"));
  const adapter = initLoraAdapter(
    config,
    { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj", "down_proj"] },
    7,
  );
  saveAdapter(adapter, dir, { baseModelName: "HuggingFaceTB/SmolLM2-135M-Instruct" });
  const json = JSON.parse(readFileSync(join(dir, "adapter_config.json"), "utf8"));
  assert.equal(json.peft_type, "LORA");
  assert.equal(json.task_type, "CAUSAL_LM");
  assert.equal(json.r, 4);
  assert.equal(json.lora_alpha, 8);
  assert.equal(json.lora_dropout, 0);
  assert.equal(json.bias, "none");
  assert.equal(json.base_model_name_or_path, "HuggingFaceTB/SmolLM2-135M-Instruct");
  assert.deepEqual(json.target_modules, ["q_proj", "v_proj", "down_proj"]);
  const file = readSafetensors(join(dir, "adapter_model.safetensors"));
  assert.deepEqual(
    file.tensors.get("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight")?.shape,
    [4, 12],
  );
  assert.deepEqual(
    file.tensors.get("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight")?.shape,
    [12, 4],
  );
  assert.equal(file.tensors.size, 2 * 3 * 2);
  const loaded = loadAdapter(dir);
  assert.deepEqual(loaded.spec, adapter.spec);
  for (const [name, t] of adapter.tensors) assert.deepEqual(loaded.tensors.get(name), t);
  const layers = loraLayersOf(loaded, config);
  assert.equal(layers.scale, 2);
});

test("PEFT's in-memory names with .default. load too; foreign tensors are refused", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-peft-"));
  writeFileSync(
    join(dir, "adapter_config.json"),
    JSON.stringify({
      peft_type: "LORA",
      r: 2,
      lora_alpha: 16,
      target_modules: ["k_proj"],
      task_type: "CAUSAL_LM",
    }),
  );
  const name = (l: number, f: string) =>
    `base_model.model.model.layers.${l}.self_attn.k_proj.lora_${f}.default.weight`;
  const tensors: [string, { shape: number[]; data: Float32Array }][] = [];
  for (const l of [0, 1]) {
    tensors.push([name(l, "A"), { shape: [2, 12], data: new Float32Array(24).fill(0.5) }]);
    tensors.push([name(l, "B"), { shape: [4, 2], data: new Float32Array(8).fill(1) }]);
  }
  writeSafetensors(join(dir, "adapter_model.safetensors"), tensors);
  const adapter = loadAdapter(dir);
  assert.equal(
    adapter.tensors.get("base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight")?.[0],
    0.5,
  );
  assert.equal(loraLayersOf(adapter, config).scale, 8);

  tensors.push(["base_model.model.lm_head.weight", { shape: [1], data: new Float32Array(1) }]);
  writeSafetensors(join(dir, "adapter_model.safetensors"), tensors);
  assert.throws(
    () => loadAdapter(dir),
    (e) => isEngineError(e, "invalid_file") && /lm_head/.test(e.message),
  );
});

test("target_modules as PEFT writes them: full module paths, or suffixes, match the tensors", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-peft-"));
  const adapter = initLoraAdapter(config, { r: 2, alpha: 4, targetModules: ["k_proj", "down_proj"] }, 3);
  saveAdapter(adapter, dir);
  const configFile = join(dir, "adapter_config.json");
  const json = JSON.parse(readFileSync(configFile, "utf8"));
  const paths = [0, 1].flatMap((l) => [
    `model.layers.${l}.self_attn.k_proj`,
    `model.layers.${l}.mlp.down_proj`,
  ]);
  writeFileSync(configFile, JSON.stringify({ ...json, target_modules: paths }));
  assert.deepEqual(loadAdapter(dir).spec.targetModules, ["k_proj", "down_proj"]);
  writeFileSync(
    configFile,
    JSON.stringify({ ...json, target_modules: ["self_attn.k_proj", "mlp.down_proj"] }),
  );
  assert.deepEqual(loadAdapter(dir).spec.targetModules, ["k_proj", "down_proj"]);
  writeFileSync(configFile, JSON.stringify({ ...json, target_modules: ["model.layers.0.self_attn.k_proj"] }));
  assert.throws(
    () => loadAdapter(dir),
    (e) => isEngineError(e, "shape_mismatch") && /not among target_modules/.test(e.message),
  );
  writeFileSync(configFile, JSON.stringify({ ...json, use_qalora: true }));
  assert.throws(
    () => loadAdapter(dir),
    (e) => isEngineError(e, "invalid_file") && /use_qalora/.test(e.message),
  );
});

test("a missing adapter folder and unsupported PEFT options give clear errors", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-peft-"));
  assert.throws(
    () => loadAdapter(join(dir, "nope")),
    (e) => isEngineError(e, "missing_file") && /adapter_config\.json/.test(e.message),
  );
  writeFileSync(
    join(dir, "adapter_config.json"),
    JSON.stringify({ peft_type: "LORA", r: 2, lora_alpha: 4, target_modules: ["q_proj"], use_dora: true }),
  );
  assert.throws(
    () => loadAdapter(dir),
    (e) => isEngineError(e, "invalid_file") && /use_dora/.test(e.message),
  );
});
