import assert from "node:assert/strict";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import { FAMILIES, parameterCount } from "../families/index.js";
import { FAMILY_CONFIGS } from "../testing/family-configs.js";
import { parseModelConfig } from "./config.js";

const smol2 = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
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
  hidden_act: "silu",
  attention_bias: false,
  mlp_bias: false,
  pretraining_tp: 1,
  initializer_range: 0.02,
  use_cache: true,
  bos_token_id: 1,
  eos_token_id: 2,
  torch_dtype: "bfloat16",
  transformers_version: "4.42.3",
};

const refuses = (raw: object, code: string, pattern: RegExp) =>
  assert.throws(
    () => parseModelConfig(raw, "/m/config.json"),
    (e) =>
      isEngineError(e) && e.code === code && /\/m\/config\.json/.test(e.message) && pattern.test(e.message),
  );

test("SmolLM2-135M's config parses, head_dim derived from hidden / heads, 134.5M parameters", () => {
  const c = parseModelConfig(smol2);
  assert.equal(c.family, "llama");
  assert.equal(c.headDim, 64);
  assert.equal(c.numKeyValueHeads, 3);
  assert.equal(c.tieWordEmbeddings, true);
  assert.equal(c.ropes.length, 1);
  assert.equal(c.ropes[0].invFreq[1], Math.fround(1 / Math.fround(100000 ** Math.fround(2 / 64))));
  assert.equal(parameterCount(c), 134_515_008);
  assert.equal(parseModelConfig({ ...smol2, head_dim: 32 }).headDim, 32);
});

test("every family's config parses to its block description", () => {
  for (const family of FAMILIES) {
    const c = parseModelConfig(FAMILY_CONFIGS[family.name]);
    assert.equal(c.family, family.name);
    assert.equal(c.layers.length, 2);
  }
  const gemma = parseModelConfig(FAMILY_CONFIGS.gemma3);
  assert.deepEqual(
    gemma.layers.map((l) => l.window),
    [3, 0],
  );
  assert.equal(gemma.ropes.length, 2, "sliding and full layers have their own rope");
  assert.equal(gemma.block.activation, "gelu_tanh");
  assert.equal(gemma.embeddingScale, Math.fround(4));
  assert.equal(gemma.attentionScale, 12 ** -0.5);
  assert.equal(gemma.finalLogitSoftcap, 3);
  const smol3 = parseModelConfig(FAMILY_CONFIGS.smollm3);
  assert.deepEqual(
    smol3.layers.map((l) => l.rope),
    [0, -1],
    "every second layer has no rotary embedding",
  );
  const qwen2 = parseModelConfig(FAMILY_CONFIGS.qwen2);
  assert.deepEqual(qwen2.block.biases, ["q", "k", "v"]);
  assert.deepEqual(
    qwen2.layers.map((l) => l.window),
    [0, 3],
    "windows from max_window_layers on",
  );
  assert.equal(parseModelConfig(FAMILY_CONFIGS.phi3).ropes[0].rotaryDim, 2);
  assert.equal(parseModelConfig(FAMILY_CONFIGS.olmo2).block.attnNorm, false);
  const granite = parseModelConfig(FAMILY_CONFIGS.granite);
  assert.deepEqual([granite.embeddingScale, granite.residualScale, granite.logitScale], [3, 0.5, 0.5]);
});

test("transformers 5's rope_parameters and the classic keys give the same rope", () => {
  const llama3 = {
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 8192,
  };
  const classic = parseModelConfig({
    ...smol2,
    rope_theta: 500000,
    rope_scaling: { rope_type: "llama3", ...llama3 },
  });
  const v5 = parseModelConfig({
    ...smol2,
    rope_theta: undefined,
    rope_scaling: undefined,
    rope_parameters: { rope_type: "llama3", rope_theta: 500000, ...llama3 },
  });
  assert.deepEqual(v5.ropes, classic.ropes);
  // Llama 3 scaling divides the low frequencies by the factor: not the default rope
  const plain = parseModelConfig({ ...smol2, rope_theta: 500000 });
  assert.ok(classic.ropes[0].invFreq[31] < plain.ropes[0].invFreq[31] / 7);
  assert.equal(classic.ropes[0].invFreq[0], plain.ropes[0].invFreq[0]);
});

test("longrope keeps short and long factors, switching past the original context, with the attention factor", () => {
  const half = 48;
  const c = parseModelConfig({
    ...FAMILY_CONFIGS.phi3,
    hidden_size: 384,
    num_attention_heads: 3,
    num_key_value_heads: 1,
    partial_rotary_factor: 0.75,
    max_position_embeddings: 131072,
    original_max_position_embeddings: 4096,
    sliding_window: undefined,
    rope_scaling: { type: "longrope", short_factor: Array(half).fill(1.5), long_factor: Array(half).fill(9) },
  });
  assert.equal(c.maxPositionEmbeddings, 131072);
  assert.equal(c.ropes[0].long?.originalMaxPositions, 4096);
  assert.ok(Math.abs((c.ropes[0].long?.invFreq[47] as number) / c.ropes[0].invFreq[47] - 1.5 / 9) < 1e-6);
  assert.equal(c.ropes[0].rotaryDim, 96);
  assert.ok(Math.abs(c.ropes[0].attentionFactor - Math.sqrt(1 + Math.log(32) / Math.log(4096))) < 1e-12);
});

test("unknown architectures, keys and values that change the computation are refused, named", () => {
  refuses(
    { ...smol2, architectures: ["GPT2LMHeadModel"], model_type: "gpt2" },
    "unsupported_architecture",
    /GPT2LMHeadModel/,
  );
  refuses({ ...smol2, rope_scaling: { type: "dynamic", factor: 2 } }, "unsupported_architecture", /dynamic/);
  refuses(
    { ...smol2, rope_scaling: { type: "linear", factor: 2, beta: 1 } },
    "unsupported_architecture",
    /"beta"/,
  );
  refuses({ ...smol2, some_new_switch: true }, "unsupported_architecture", /some_new_switch/);
  refuses({ ...smol2, pretraining_tp: 2 }, "unsupported_architecture", /pretraining_tp/);
  refuses({ ...smol2, hidden_act: "gelu" }, "unsupported_architecture", /hidden_act/);
  refuses(
    { ...smol2, quantization_config: { quant_method: "gptq" } },
    "unsupported_architecture",
    /quantized/,
  );
  refuses(
    { ...FAMILY_CONFIGS.gemma3, attn_logit_softcapping: 50 },
    "unsupported_architecture",
    /attn_logit_softcapping/,
  );
  refuses(
    { ...smol2, rope_parameters: { rope_type: "default", rope_theta: 10000 } },
    "unsupported_architecture",
    /rope_theta/,
  );
  refuses({ ...smol2, hidden_size: "576" }, "invalid_file", /hidden_size/);
  refuses({ ...smol2, num_key_value_heads: 4 }, "invalid_file", /num_key_value_heads/);
});
