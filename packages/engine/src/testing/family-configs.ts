// Tiny config.json objects of every family, as transformers 5 writes them,
// for tests that run one computation per family (gradients, decode vs full
// forward, loading). Sizes are small and odd on purpose.
import type { FamilyName } from "../families/index.js";

const sizes = {
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 20,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  tie_word_embeddings: false,
};

/** One config per family, each using what distinguishes the family (windows shorter than test sequences). */
export const FAMILY_CONFIGS: Record<FamilyName, Record<string, unknown>> = {
  llama: {
    ...sizes,
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    attention_bias: true,
    rope_parameters: {
      rope_type: "llama3",
      rope_theta: 500000,
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 16,
    },
  },
  mistral: {
    ...sizes,
    architectures: ["MistralForCausalLM"],
    model_type: "mistral",
    head_dim: 6,
    sliding_window: 3,
    rope_theta: 10000,
  },
  qwen2: {
    ...sizes,
    architectures: ["Qwen2ForCausalLM"],
    model_type: "qwen2",
    use_sliding_window: true,
    sliding_window: 3,
    max_window_layers: 1,
    rope_parameters: {
      rope_type: "yarn",
      rope_theta: 10000,
      factor: 4,
      original_max_position_embeddings: 16,
    },
  },
  qwen3: {
    ...sizes,
    architectures: ["Qwen3ForCausalLM"],
    model_type: "qwen3",
    head_dim: 8,
    tie_word_embeddings: true,
    rope_parameters: { rope_type: "linear", rope_theta: 1000000, factor: 2 },
  },
  gemma3: {
    ...sizes,
    architectures: ["Gemma3ForCausalLM"],
    model_type: "gemma3_text",
    head_dim: 8,
    hidden_activation: "gelu_pytorch_tanh",
    query_pre_attn_scalar: 12,
    sliding_window: 3,
    layer_types: ["sliding_attention", "full_attention"],
    final_logit_softcapping: 3,
    tie_word_embeddings: true,
    rope_parameters: {
      full_attention: { rope_type: "linear", rope_theta: 1000000, factor: 8 },
      sliding_attention: { rope_type: "default", rope_theta: 10000 },
    },
  },
  phi3: {
    ...sizes,
    architectures: ["Phi3ForCausalLM"],
    model_type: "phi3",
    partial_rotary_factor: 0.5,
    sliding_window: 5,
    rope_theta: 10000,
  },
  smollm3: {
    ...sizes,
    architectures: ["SmolLM3ForCausalLM"],
    model_type: "smollm3",
    no_rope_layer_interval: 2,
    rope_theta: 10000,
  },
  olmo2: {
    ...sizes,
    architectures: ["Olmo2ForCausalLM"],
    model_type: "olmo2",
    rope_theta: 10000,
  },
  granite: {
    ...sizes,
    architectures: ["GraniteForCausalLM"],
    model_type: "granite",
    embedding_multiplier: 3,
    attention_multiplier: 0.3,
    residual_multiplier: 0.5,
    logits_scaling: 2,
    rope_theta: 10000,
  },
};
