import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { ModelRegistry } from "./model-registry.js";
import {
  engineImplements,
  readRawConfig,
  readTransformersOnlyModel,
  transformersLoraParameters,
} from "./transformers-only-model.js";

/** A safetensors file of F32 zeros with these shapes (the header is all the reader looks at). */
function writeZeros(file: string, shapes: Record<string, number[]>): void {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let offset = 0;
  for (const [name, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((n, d) => n * d, 1) * 4;
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(file, Buffer.concat([length, json, Buffer.alloc(offset)]));
}

// A GPT-NeoX layout, the Hugging Face names of a two-layer model.
const NEOX = {
  "gpt_neox.embed_in.weight": [10, 4],
  "gpt_neox.layers.0.input_layernorm.weight": [4],
  "gpt_neox.layers.0.attention.query_key_value.weight": [12, 4],
  "gpt_neox.layers.0.attention.dense.weight": [4, 4],
  "gpt_neox.layers.0.mlp.dense_h_to_4h.weight": [16, 4],
  "gpt_neox.layers.0.mlp.dense_4h_to_h.weight": [4, 16],
  "gpt_neox.layers.1.attention.query_key_value.weight": [12, 4],
  "gpt_neox.layers.1.attention.dense.weight": [4, 4],
  "gpt_neox.layers.1.mlp.dense_h_to_4h.weight": [16, 4],
  "gpt_neox.layers.1.mlp.dense_4h_to_h.weight": [4, 16],
  "gpt_neox.final_layer_norm.weight": [4],
  "embed_out.weight": [10, 4],
};
const NEOX_CONFIG = {
  architectures: ["GPTNeoXForCausalLM"],
  model_type: "gpt_neox",
  max_position_embeddings: 64,
};

function neoxFolder(options: { sharded?: boolean; tokenizer?: boolean; weights?: boolean } = {}): string {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-neox-")), "neox");
  mkdirSync(dir);
  writeFileSync(join(dir, "config.json"), JSON.stringify(NEOX_CONFIG));
  if (options.tokenizer !== false) writeFileSync(join(dir, "tokenizer.json"), "{}");
  if (options.weights === false) return dir;
  if (!options.sharded) {
    writeZeros(join(dir, "model.safetensors"), NEOX);
    return dir;
  }
  const names = Object.keys(NEOX);
  const halves = [names.slice(0, 6), names.slice(6)];
  const weightMap: Record<string, string> = {};
  halves.forEach((half, i) => {
    const file = `model-0000${i + 1}-of-00002.safetensors`;
    writeZeros(join(dir, file), Object.fromEntries(half.map((n) => [n, NEOX[n as keyof typeof NEOX]])));
    for (const n of half) weightMap[n] = file;
  });
  writeFileSync(join(dir, "model.safetensors.index.json"), JSON.stringify({ weight_map: weightMap }));
  return dir;
}

const NEOX_PARAMETERS = 40 + 4 + 2 * (48 + 16 + 64 + 64) + 4 + 40;

it("tells the architectures the engine implements from those it does not, by the engine's rule", () => {
  assert.equal(engineImplements({ architectures: ["LlamaForCausalLM"] }), true);
  assert.equal(engineImplements({ architectures: ["GPT2LMHeadModel", "Qwen3ForCausalLM"] }), true);
  assert.equal(engineImplements({ architectures: ["GPT2LMHeadModel"], model_type: "llama" }), false);
  assert.equal(engineImplements({ model_type: "qwen2" }), true);
  assert.equal(engineImplements({ model_type: "gpt2" }), false);
});

it("reads such a model from its files: parameters from the safetensors headers, LoRA targets inside numbered layers", () => {
  for (const sharded of [false, true]) {
    const dir = neoxFolder({ sharded });
    const model = readTransformersOnlyModel(dir, readRawConfig(dir)!);
    assert.equal(model.architecture, "GPTNeoXForCausalLM");
    assert.equal(model.parameters, NEOX_PARAMETERS);
    assert.equal(model.contextLength, 64);
    // the embeddings and the output head are outside the numbered layers; norms are not matrices
    assert.deepEqual(model.loraTargets, ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]);
    // r × (rows + columns) per targeted matrix, two layers
    assert.equal(transformersLoraParameters(model, ["dense"], 2), 2 * 2 * (4 + 4));
    assert.equal(
      transformersLoraParameters(model, ["all-linear"], 1),
      2 * (12 + 4 + 4 + 4 + 16 + 4 + 4 + 16),
    );
  }
});

it("registers such a folder as a transformers-only model, and refuses one transformers could not train either", () => {
  const dir = neoxFolder();
  const registry = new ModelRegistry({ bundledDir: null, extra: [{ name: "me/neox", dir }] });
  const model = registry.get("me/neox")!;
  assert.equal(model.config, null);
  assert.equal(model.info.family, "transformers");
  assert.equal(model.info.parameters, NEOX_PARAMETERS);
  assert.deepEqual(model.info.loraTargets, ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]);
  for (const [options, why] of [
    [{ tokenizer: false }, /no tokenizer\.json in /],
    [{ weights: false }, /no model\.safetensors \(nor model\.safetensors\.index\.json\) in /],
  ] as const) {
    const bad = neoxFolder(options);
    assert.throws(
      () => new ModelRegistry({ bundledDir: null, extra: [{ name: "me/bad", dir: bad }] }),
      (error: Error) => {
        assert.match(
          error.message,
          /^--model me\/bad=.*architecture GPTNeoXForCausalLM is not supported \(supported: /,
        );
        assert.match(error.message, /nor can the torch backend train it with transformers \+ peft: /);
        assert.match(error.message, why);
        return true;
      },
    );
  }
  const noContext = neoxFolder();
  writeFileSync(join(noContext, "config.json"), JSON.stringify({ architectures: ["GPTNeoXForCausalLM"] }));
  assert.throws(
    () => readTransformersOnlyModel(noContext, readRawConfig(noContext)!),
    /gives no context length \(max_position_embeddings, n_positions/,
  );
});
