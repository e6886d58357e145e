import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { isEngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { readSafetensors } from "../loading/safetensors.js";
import { configWithDtype } from "./hf-folder.js";
import { checkExportOptions, exportModel } from "./index.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "fixtures");
const PROMPT = [5, 40, 77, 100, 3, 250, 17, 60];

describe("svc export: merged and peft", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const fixture of readdirSync(FIXTURES)) {
    it(`${fixture}: the merged folder reloads with the logits of base + adapter`, async () => {
      const base = join(FIXTURES, fixture);
      const adapterDir = join(base, "adapter");
      const out = join(root, fixture);
      const result = await exportModel({ baseDir: base, adapterDir, format: "merged", quant: "f32", out });
      assert.ok(
        result.files.includes("model.safetensors") && result.files.includes("generation_config.json"),
      );
      assert.ok(result.files.includes("tokenizer.json") && result.files.includes("tokenizer_config.json"));
      const want = (await loadModel(base, { adapter: adapterDir })).logits(PROMPT);
      const got = (await loadModel(out)).logits(PROMPT);
      const scale = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - got[i]));
      assert.ok(diff <= 1e-4 * scale, `merged logits differ by ${diff}`);
      const config = JSON.parse(readFileSync(join(out, "config.json"), "utf8"));
      assert.equal(config.dtype ?? config.torch_dtype, "float32");
    });
  }

  it("keeps the base model's dtype by default and writes f16 or bf16 when asked", async () => {
    const base = join(FIXTURES, "qwen3-v5-bf16");
    const kept = await exportModel({
      baseDir: base,
      adapterDir: join(base, "adapter"),
      format: "merged",
      out: join(root, "bf16"),
    });
    assert.equal(kept.quant, "base");
    const tensors = readSafetensors(join(root, "bf16", "model.safetensors")).tensors;
    assert.ok([...tensors.values()].every((t) => t.dtype === "BF16"));
    await exportModel({ baseDir: base, format: "merged", quant: "f16", out: join(root, "f16") });
    const half = readSafetensors(join(root, "f16", "model.safetensors")).tensors;
    assert.ok([...half.values()].every((t) => t.dtype === "F16"));
  });

  it("a merged folder past the shard size is sharded with an index, and reloads the same", async () => {
    const base = join(FIXTURES, "gemma3-v5-f32");
    const adapterDir = join(base, "adapter");
    const out = join(root, "sharded");
    const result = await exportModel({
      baseDir: base,
      adapterDir,
      format: "merged",
      quant: "f32",
      out,
      shardBytes: 40_000,
    });
    const shards = result.files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f));
    assert.ok(shards.length > 1, result.files.join(", "));
    assert.ok(!result.files.includes("model.safetensors"));
    const index = JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8"));
    assert.deepEqual([...new Set(Object.values(index.weight_map))].sort(), shards.sort());
    const want = (await loadModel(base, { adapter: adapterDir })).logits(PROMPT);
    const got = (await loadModel(out)).logits(PROMPT);
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(want[i] - got[i]) < 1e-4);
  });

  it("peft copies the adapter folder as PEFT reads it", async () => {
    const base = join(FIXTURES, "phi3-mini-v5-f32");
    const result = await exportModel({
      baseDir: base,
      adapterDir: join(base, "adapter"),
      format: "peft",
      out: join(root, "peft"),
    });
    assert.deepEqual(result.files.sort(), ["adapter_config.json", "adapter_model.safetensors"]);
    assert.deepEqual(
      readFileSync(join(root, "peft", "adapter_model.safetensors")),
      readFileSync(join(base, "adapter", "adapter_model.safetensors")),
    );
  });

  it("refuses formats and quantizations it does not write, naming the field", () => {
    const refused = (f: () => unknown, field: string, text: RegExp) =>
      assert.throws(f, (e) => isEngineError(e) && e.file === field && text.test(e.message));
    refused(
      () => checkExportOptions("onnx", undefined, true),
      "format",
      /"onnx" is not one of peft, merged, gguf/,
    );
    refused(
      () => checkExportOptions("gguf", "q2_k", true),
      "quant",
      /"q2_k" is not one of f16, q8_0, q4_k_m/,
    );
    refused(() => checkExportOptions("merged", "q8_0", true), "quant", /base, f32, f16, bf16/);
    refused(() => checkExportOptions("peft", undefined, false), "format", /needs an adapter/);
    assert.equal(checkExportOptions("gguf", undefined, false), "f16");
  });

  it("refuses a GGUF export llama.cpp would compute differently, and warns where it only differs past a window", async () => {
    const base = join(FIXTURES, "llama-yarn-v5-f16");
    await assert.rejects(
      exportModel({ baseDir: base, format: "gguf", out: join(root, "yarn") }),
      /yarn beta_fast 16 \(llama.cpp's llama uses 32\)/,
    );
    const swa = await exportModel({
      baseDir: join(FIXTURES, "qwen2-swa-v5-f32"),
      format: "gguf",
      out: join(root, "swa"),
    });
    assert.match(
      swa.warnings.join("\n"),
      /attends to the whole context, not a sliding window of 5 positions/,
    );
  });

  it("config.json keeps its text (10.0 stays 10.0 for transformers' strict float fields), only its dtype changes", () => {
    const text =
      '{\n  "final_logit_softcapping": 10.0,\n  "torch_dtype": "float32",\n  "rope_theta": 1000000.0\n}\n';
    assert.equal(configWithDtype(text, "BF16"), text.replace('"float32"', '"bfloat16"'));
    assert.equal(configWithDtype('{\n  "a": 1.0\n}', "F16"), '{\n  "dtype": "float16",\n  "a": 1.0\n}');
    assert.equal(JSON.parse(configWithDtype('{"dtype": null, "x": 2}', "F32")).dtype, "float32");
  });
});
