import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { initLoraAdapter } from "../adapters/lora.js";
import { saveAdapter } from "../adapters/peft.js";
import { isEngineError } from "../errors.js";
import { createRandomModel } from "../testing/random-model.js";
import { loadModel } from "./load.js";

test("a random HF-layout folder loads; logits have shape [T, vocab]; adapters apply", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-load-"));
  await createRandomModel(dir, { seed: 3, tieWordEmbeddings: false });
  const model = await loadModel(dir);
  assert.equal(model.config.hiddenSize, 32);
  assert.notEqual(model.weights.lmHead, model.weights.embed);
  const ids = model.tokenizer.encode("hello");
  const logits = model.logits(ids);
  assert.equal(logits.length, ids.length * model.config.vocabSize);
  assert.ok(logits.every(Number.isFinite));

  const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4, targetModules: ["q_proj", "up_proj"] }, 1);
  for (const [name, t] of adapter.tensors) if (name.includes("lora_B")) t.fill(0.3);
  saveAdapter(adapter, join(dir, "adapter"));
  const adapted = await loadModel(dir, { adapter: join(dir, "adapter") });
  const changed = adapted.logits(ids);
  assert.ok(
    changed.some((v, i) => Math.abs(v - logits[i]) > 1e-4),
    "the adapter changes the logits",
  );
  const view = adapted.withAdapter(null);
  assert.equal(view.weights, adapted.weights);
  assert.deepEqual(view.logits(ids), model.logits(ids));
  assert.throws(
    () => model.logits([model.config.vocabSize]),
    (e) => isEngineError(e, "invalid_argument"),
  );
});

test("missing files, other architectures and shape mismatches name the file and the problem", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-load-"));
  await createRandomModel(dir, { seed: 1 });
  const configPath = join(dir, "config.json");
  const original = readFileSync(configPath, "utf8");

  writeFileSync(
    configPath,
    JSON.stringify({
      ...JSON.parse(original),
      architectures: ["GPTNeoXForCausalLM"],
      model_type: "gpt_neox",
    }),
  );
  await assert.rejects(
    loadModel(dir),
    (e) => isEngineError(e, "unsupported_architecture") && /GPTNeoX/.test(e.message),
  );

  // a Qwen2 config over these Llama tensors: its q/k/v biases are missing
  writeFileSync(
    configPath,
    JSON.stringify({ ...JSON.parse(original), architectures: ["Qwen2ForCausalLM"], model_type: "qwen2" }),
  );
  await assert.rejects(
    loadModel(dir),
    (e) => isEngineError(e, "shape_mismatch") && /q_proj\.bias/.test(e.message),
  );

  writeFileSync(
    configPath,
    JSON.stringify({ ...JSON.parse(original), hidden_size: 40, num_attention_heads: 4, head_dim: 8 }),
  );
  await assert.rejects(
    loadModel(dir),
    (e) =>
      isEngineError(e, "shape_mismatch") &&
      /model\.safetensors/.test(e.message) &&
      /expected \[(32,)?40\]/.test(e.message),
  );

  writeFileSync(configPath, JSON.stringify({ ...JSON.parse(original), tie_word_embeddings: false }));
  await assert.rejects(
    loadModel(dir),
    (e) => isEngineError(e, "shape_mismatch") && /lm_head\.weight/.test(e.message),
  );

  writeFileSync(configPath, original);
  rmSync(join(dir, "model.safetensors"));
  await assert.rejects(
    loadModel(dir),
    (e) => isEngineError(e, "missing_file") && /model\.safetensors/.test(e.message),
  );
  rmSync(configPath);
  await assert.rejects(
    loadModel(dir),
    (e) => isEngineError(e, "missing_file") && /config\.json/.test(e.message),
  );
});
