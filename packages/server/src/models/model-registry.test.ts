import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { parameterCount } from "@svc/engine";
import { ModelRegistry } from "./model-registry.js";

const config = {
  architectures: ["LlamaForCausalLM"],
  hidden_size: 8,
  intermediate_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  vocab_size: 10,
  tie_word_embeddings: true,
  max_position_embeddings: 128,
};

it("lists bundled model folders as svc/<folder> and --model entries, with parameter counts", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-registry-"));
  mkdirSync(join(root, "bundled", "pico"), { recursive: true });
  mkdirSync(join(root, "bundled", "not-a-model"), { recursive: true });
  writeFileSync(join(root, "bundled", "pico", "config.json"), JSON.stringify(config));
  writeFileSync(
    join(root, "bundled", "pico", "README.md"),
    "# Pico\n\nA **tiny** Llama made here. It knows little.\n",
  );
  mkdirSync(join(root, "extra"));
  writeFileSync(
    join(root, "extra", "config.json"),
    JSON.stringify({ ...config, tie_word_embeddings: false }),
  );
  const registry = new ModelRegistry({
    bundledDir: join(root, "bundled"),
    extra: [{ name: "me/extra", dir: join(root, "extra") }],
  });
  assert.deepEqual(registry.names(), ["svc/pico", "me/extra"]);
  const pico = registry.get("svc/pico")!.info;
  // embeddings 80 + 2 layers × (q 64 + o 64 + k 32 + v 32 + mlp 384 + norms 16) + final norm 8
  assert.equal(pico.parameters, 80 + 2 * (64 + 64 + 32 + 32 + 384 + 16) + 8);
  assert.equal(pico.contextLength, 128);
  assert.equal(pico.family, "llama");
  assert.equal(pico.architecture, "LlamaForCausalLM");
  assert.deepEqual(pico.loraTargets, [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
  ]);
  assert.equal(pico.description, "A tiny Llama made here.");
  assert.equal(registry.get("me/extra")!.info.parameters, pico.parameters + 80);
  assert.throws(
    () => new ModelRegistry({ bundledDir: null, extra: [{ name: "noslash", dir: join(root, "extra") }] }),
    /<org>\/<model>/,
  );
  assert.throws(
    () => new ModelRegistry({ bundledDir: null, extra: [{ name: "a/b", dir: root }] }),
    /no config.json/,
  );
});

it("takes a model's family, size, context and LoRA targets from the engine", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-registry-"));
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({ ...config, architectures: ["Phi3ForCausalLM"], model_type: "phi3" }),
  );
  const phi = new ModelRegistry({ bundledDir: null, extra: [{ name: "me/phi", dir }] }).get("me/phi")!;
  assert.equal(phi.info.family, "phi3");
  assert.equal(phi.info.architecture, "Phi3ForCausalLM");
  assert.deepEqual(phi.info.loraTargets, ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]);
  assert.equal(phi.info.parameters, parameterCount(phi.config!));
  assert.equal(phi.info.contextLength, 128);
  assert.equal(phi.info.description, `Phi3ForCausalLM model from ${dir}`);
});

it("refuses a folder the engine cannot read with the engine's reason, --model and bundled alike", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-registry-"));
  const folder = (name: string, json: object) => {
    mkdirSync(join(root, name, "m"), { recursive: true });
    writeFileSync(join(root, name, "m", "config.json"), JSON.stringify(json));
    return join(root, name, "m");
  };
  const unsupported = folder("arch", { ...config, architectures: ["MambaForCausalLM"] });
  const unknownKey = folder("key", { ...config, turbo_attention: true });
  assert.throws(
    () => new ModelRegistry({ bundledDir: null, extra: [{ name: "me/mamba", dir: unsupported }] }),
    /^Error: --model me\/mamba=.*architecture MambaForCausalLM is not supported \(supported: LlamaForCausalLM/,
  );
  assert.throws(
    () => new ModelRegistry({ bundledDir: null, extra: [{ name: "me/turbo", dir: unknownKey }] }),
    /--model me\/turbo=.*turbo_attention/,
  );
  assert.throws(
    () => new ModelRegistry({ bundledDir: join(root, "arch") }),
    /bundled model svc\/m .*--bundled-models none.*MambaForCausalLM is not supported/,
  );
});
