import assert from "node:assert/strict";
import { test } from "node:test";
import { parseLlamaConfig } from "./config.js";
import { isEngineError } from "./errors.js";

const base = {
  architectures: ["LlamaForCausalLM"],
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  vocab_size: 49152,
  tie_word_embeddings: true,
  max_position_embeddings: 8192,
  rope_scaling: null,
};

test("SmolLM2-135M's config parses, head_dim derived from hidden / heads", () => {
  const c = parseLlamaConfig(base);
  assert.equal(c.headDim, 64);
  assert.equal(c.numKeyValueHeads, 3);
  assert.equal(c.tieWordEmbeddings, true);
  assert.equal(c.ropeTheta, 100000);
  assert.equal(parseLlamaConfig({ ...base, head_dim: 32 }).headDim, 32);
});

test("other architectures, rope scaling and bad sizes are refused with the file named", () => {
  const refuses = (raw: object, code: string, pattern: RegExp) =>
    assert.throws(
      () => parseLlamaConfig(raw, "/m/config.json"),
      (e) =>
        isEngineError(e) && e.code === code && /\/m\/config\.json/.test(e.message) && pattern.test(e.message),
    );
  refuses(
    { ...base, architectures: ["GPT2LMHeadModel"], model_type: "gpt2" },
    "unsupported_architecture",
    /GPT2LMHeadModel/,
  );
  refuses(
    { ...base, rope_scaling: { type: "linear", factor: 2 } },
    "unsupported_architecture",
    /rope_scaling/,
  );
  refuses({ ...base, hidden_size: "576" }, "invalid_file", /hidden_size/);
  refuses({ ...base, num_key_value_heads: 4 }, "invalid_file", /num_key_value_heads/);
});
