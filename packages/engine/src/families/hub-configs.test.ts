// config.json files as the Hub publishes them (their keys and values, written
// out here) load: every key is one the family reads or knows to be harmless.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parameterCount, parseModelConfig } from "./index.js";

const common = { attention_dropout: 0, initializer_range: 0.02, torch_dtype: "bfloat16", use_cache: true };

const HUB: Record<string, [Record<string, unknown>, string, number]> = {
  "Llama-3.2-1B-Instruct": [
    {
      ...common,
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      attention_bias: false,
      bos_token_id: 128000,
      eos_token_id: [128001, 128008, 128009],
      head_dim: 64,
      hidden_act: "silu",
      hidden_size: 2048,
      intermediate_size: 8192,
      max_position_embeddings: 131072,
      mlp_bias: false,
      num_attention_heads: 32,
      num_hidden_layers: 16,
      num_key_value_heads: 8,
      pretraining_tp: 1,
      rms_norm_eps: 1e-5,
      rope_scaling: {
        factor: 32,
        high_freq_factor: 4,
        low_freq_factor: 1,
        original_max_position_embeddings: 8192,
        rope_type: "llama3",
      },
      rope_theta: 500000,
      tie_word_embeddings: true,
      transformers_version: "4.45.0.dev0",
      vocab_size: 128256,
    },
    "llama",
    1_235_814_400,
  ],
  "SmolLM2-135M-Instruct": [
    {
      ...common,
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      attention_bias: false,
      bos_token_id: 1,
      eos_token_id: 2,
      hidden_act: "silu",
      hidden_size: 576,
      intermediate_size: 1536,
      is_llama_config: true,
      max_position_embeddings: 8192,
      mlp_bias: false,
      num_attention_heads: 9,
      num_hidden_layers: 30,
      num_key_value_heads: 3,
      pad_token_id: 2,
      pretraining_tp: 1,
      rms_norm_eps: 1e-5,
      rope_interleaved: false,
      rope_scaling: null,
      rope_theta: 100000,
      tie_word_embeddings: true,
      "transformers.js_config": { kv_cache_dtype: { q4f16: "float16", fp16: "float16" } },
      transformers_version: "4.42.3",
      vocab_size: 49152,
    },
    "llama",
    134_515_008,
  ],
  "Qwen2.5-0.5B-Instruct": [
    {
      ...common,
      architectures: ["Qwen2ForCausalLM"],
      model_type: "qwen2",
      bos_token_id: 151643,
      eos_token_id: 151645,
      hidden_act: "silu",
      hidden_size: 896,
      intermediate_size: 4864,
      max_position_embeddings: 32768,
      max_window_layers: 21,
      num_attention_heads: 14,
      num_hidden_layers: 24,
      num_key_value_heads: 2,
      rms_norm_eps: 1e-6,
      rope_scaling: null,
      rope_theta: 1000000,
      sliding_window: 32768,
      tie_word_embeddings: true,
      transformers_version: "4.43.1",
      use_mrope: false,
      use_sliding_window: false,
      vocab_size: 151936,
    },
    "qwen2",
    494_032_768,
  ],
  "Phi-4-mini-instruct": [
    {
      ...common,
      architectures: ["Phi3ForCausalLM"],
      model_type: "phi3",
      auto_map: { AutoConfig: "configuration_phi3.Phi3Config" },
      attention_bias: false,
      bos_token_id: 199999,
      embd_pdrop: 0,
      eos_token_id: 199999,
      full_attn_mod: 1,
      hidden_act: "silu",
      hidden_size: 3072,
      interpolate_factor: 1,
      intermediate_size: 8192,
      lm_head_bias: false,
      max_position_embeddings: 131072,
      mlp_bias: false,
      num_attention_heads: 24,
      num_hidden_layers: 32,
      num_key_value_heads: 8,
      original_max_position_embeddings: 4096,
      pad_token_id: 199999,
      partial_rotary_factor: 0.75,
      resid_pdrop: 0,
      rms_norm_eps: 1e-5,
      rope_scaling: { long_factor: Array(48).fill(1.5), short_factor: Array(48).fill(1), type: "longrope" },
      rope_theta: 10000,
      sliding_window: 262144,
      tie_word_embeddings: true,
      transformers_version: "4.45.0",
      vocab_size: 200064,
    },
    "phi3",
    3_836_021_760,
  ],
};

for (const [name, [config, family, parameters]] of Object.entries(HUB)) {
  test(`${name}'s config.json loads as ${family}`, () => {
    const parsed = parseModelConfig(config, `${name}/config.json`);
    assert.equal(parsed.family, family);
    assert.equal(parameterCount(parsed), parameters);
  });
}

test("published switches at values transformers does not compute are refused", () => {
  const qwen = HUB["Qwen2.5-0.5B-Instruct"][0];
  assert.throws(() => parseModelConfig({ ...qwen, use_mrope: true }), /use_mrope/);
  const smol = HUB["SmolLM2-135M-Instruct"][0];
  assert.throws(() => parseModelConfig({ ...smol, rope_interleaved: true }), /rope_interleaved/);
  assert.throws(() => parseModelConfig({ ...smol, pretraining_tp: 2 }), /pretraining_tp/);
  const phi = HUB["Phi-4-mini-instruct"][0];
  assert.throws(() => parseModelConfig({ ...phi, lm_head_bias: true }), /lm_head_bias/);
});
