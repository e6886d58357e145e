// The model shapes the speed benchmarks run, as config.json objects (the
// engine parses them with parseModelConfig, PyTorch with the repo's reference
// configs.parse), and the FLOPs of one LoRA training step of a shape.
//
// The real models' configs are the public config.json files' values for every
// key that changes the computation (copies checked 2026-11-24 in public
// repositories: Qwen/Qwen2.5-0.5B snapshot 060db64, google/gemma-3-270m as
// transformers 4.55 writes it, Qwen2.5-1.5B, SmolLM2-135M). Metadata keys are
// left out; so is Qwen2.5's `"use_mrope": false`, which the engine's config
// reader refuses today (it is false, so it changes nothing).
// Qwen2.5-3B and Qwen2.5-7B (added for bench/large-model.mjs's 8 GiB question,
// issue 38) are written from memory of their public config.json files, not
// checked against a fetched copy (none could be fetched here): the sizes the
// issue's brief gives (3B: hidden 2048, ffn 11008, 36 layers, 16 / 2 KV heads
// of 128, tied; 7B: hidden 3584, ffn 18944, 28 layers, 28 / 4 KV heads of 128,
// vocab 152064, untied), rope_theta 1e6, rms_norm_eps 1e-6; their
// max_position_embeddings / sliding_window / max_window_layers (32768 / 32768
// / 70 and 131072 / 131072 / 28) change nothing with use_sliding_window false.

const llama = (sizes) => ({
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_act: "silu",
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  ...sizes,
});

const qwen2 = (sizes) => ({
  architectures: ["Qwen2ForCausalLM"],
  model_type: "qwen2",
  hidden_act: "silu",
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  tie_word_embeddings: true,
  use_sliding_window: false,
  vocab_size: 151936,
  ...sizes,
});

/** Gemma 3's default layer pattern: five sliding-window layers, then one full. */
const gemmaLayerTypes = (n) =>
  Array.from({ length: n }, (_, l) => ((l + 1) % 6 === 0 ? "full_attention" : "sliding_attention"));

/** name → { config (config.json), batch, seq, note }. */
export const SHAPES = {
  tiny: {
    note: "Llama, hidden 256, 4 layers",
    batch: 8,
    seq: 256,
    config: llama({
      hidden_size: 256,
      intermediate_size: 688,
      num_hidden_layers: 4,
      num_attention_heads: 4,
      num_key_value_heads: 4,
      rope_theta: 10000,
      vocab_size: 4096,
      tie_word_embeddings: false,
      max_position_embeddings: 4096,
    }),
  },
  small: {
    note: "SmolLM2-135M (Llama)",
    batch: 4,
    seq: 256,
    config: llama({
      hidden_size: 576,
      intermediate_size: 1536,
      num_hidden_layers: 30,
      num_attention_heads: 9,
      num_key_value_heads: 3,
      head_dim: 64,
      rope_theta: 100000,
      vocab_size: 49152,
      tie_word_embeddings: true,
      max_position_embeddings: 8192,
    }),
  },
  qwen: {
    note: "Qwen2.5-0.5B (Qwen2: q/k/v biases)",
    batch: 4,
    seq: 256,
    config: qwen2({
      hidden_size: 896,
      intermediate_size: 4864,
      num_hidden_layers: 24,
      num_attention_heads: 14,
      num_key_value_heads: 2,
      max_position_embeddings: 32768,
      max_window_layers: 24,
      sliding_window: 32768,
    }),
  },
  gemma: {
    note: "Gemma-3-270m (GeGLU, 4 norms, q/k norms, windows 512)",
    batch: 4,
    seq: 256,
    config: {
      architectures: ["Gemma3ForCausalLM"],
      model_type: "gemma3_text",
      attention_bias: false,
      attn_logit_softcapping: null,
      final_logit_softcapping: null,
      head_dim: 256,
      hidden_activation: "gelu_pytorch_tanh",
      hidden_size: 640,
      intermediate_size: 2048,
      layer_types: gemmaLayerTypes(18),
      max_position_embeddings: 32768,
      num_attention_heads: 4,
      num_hidden_layers: 18,
      num_key_value_heads: 1,
      query_pre_attn_scalar: 256,
      rms_norm_eps: 1e-6,
      rope_local_base_freq: 10000.0,
      rope_scaling: null,
      rope_theta: 1000000.0,
      sliding_window: 512,
      use_bidirectional_attention: false,
      vocab_size: 262144,
    },
  },
  "qwen-1.5b": {
    note: "Qwen2.5-1.5B (Qwen2: q/k/v biases)",
    batch: 1,
    seq: 256,
    config: qwen2({
      hidden_size: 1536,
      intermediate_size: 8960,
      num_hidden_layers: 28,
      num_attention_heads: 12,
      num_key_value_heads: 2,
      max_position_embeddings: 131072,
      max_window_layers: 28,
      sliding_window: 131072,
    }),
  },
  "qwen-3b": {
    note: "Qwen2.5-3B (Qwen2: q/k/v biases)",
    batch: 1,
    seq: 512,
    config: qwen2({
      hidden_size: 2048,
      intermediate_size: 11008,
      num_hidden_layers: 36,
      num_attention_heads: 16,
      num_key_value_heads: 2,
      max_position_embeddings: 32768,
      max_window_layers: 70,
      sliding_window: 32768,
    }),
  },
  "qwen-7b": {
    note: "Qwen2.5-7B (Qwen2: q/k/v biases, untied head)",
    batch: 1,
    seq: 512,
    config: qwen2({
      hidden_size: 3584,
      intermediate_size: 18944,
      num_hidden_layers: 28,
      num_attention_heads: 28,
      num_key_value_heads: 4,
      vocab_size: 152064,
      tie_word_embeddings: false,
      max_position_embeddings: 131072,
      max_window_layers: 28,
      sliding_window: 131072,
    }),
  },
};

/** Query/key pairs causal attention over T positions computes, with a window of W keys (0: none). */
function attentionPairs(T, W) {
  let pairs = 0;
  for (let t = 0; t < T; t++) pairs += W > 0 ? Math.min(t + 1, W) : t + 1;
  return pairs;
}

/**
 * FLOPs of one LoRA training step (forward + backward) over `batch` sequences
 * of `seq` tokens, counting the matmul work a step needs (2 per multiply-add):
 *  - base projections forward, 2·N·in·out each;
 *  - their input gradients backward, the same, except layer 0's q/k/v (the
 *    embeddings are frozen, so nothing below layer 0 needs a gradient);
 *  - attention: QKᵀ and P·V forward, dP, dS·K, dSᵀ·Q and Pᵀ·dO backward, on
 *    the causal (and windowed) pairs only: 12·D·pairs per query head;
 *  - LM head forward and its input gradient (no weight gradient: frozen);
 *  - LoRA (rank r on `loraSlots`): x·Aᵀ and h·Bᵀ forward; dB, dh, dA and the
 *    input gradient dh·A backward (not for layer 0's q/k/v).
 * Norms, rope, activations, softmax, the loss and AdamW are not counted
 * (they are O(N·width), not O(N·width²)).
 * `config` is a parsed ModelConfig.
 */
export function trainStepFlops(config, batch, seq, r = 16) {
  const N = batch * seq;
  const C = config.hiddenSize;
  const F = config.intermediateSize;
  const D = config.headDim;
  const Q = config.numAttentionHeads * D;
  const K = config.numKeyValueHeads * D;
  const V = config.vocabSize;
  const proj = { q: [C, Q], k: [C, K], v: [C, K], o: [Q, C], gate: [C, F], up: [C, F], down: [F, C] };
  const qkv = new Set(["q", "k", "v"]);
  const out = { base: 0, inputGrad: 0, attention: 0, lmHead: 0, lora: 0 };
  for (let l = 0; l < config.numHiddenLayers; l++) {
    for (const [slot, [i, o]] of Object.entries(proj)) {
      const needsDx = !(l === 0 && qkv.has(slot));
      out.base += 2 * N * i * o;
      if (needsDx) out.inputGrad += 2 * N * i * o;
      // forward x·Aᵀ + h·Bᵀ; backward dB, dh, dA, and dx += dh·A
      out.lora += 2 * N * r * (i + o) + 2 * N * r * (2 * o + i) + (needsDx ? 2 * N * r * i : 0);
    }
    out.attention += batch * 12 * D * config.numAttentionHeads * attentionPairs(seq, config.layers[l].window);
  }
  out.lmHead = 2 * (2 * N * C * V);
  out.total = out.base + out.inputGrad + out.attention + out.lmHead + out.lora;
  return out;
}

/**
 * The GEMM shapes [label, m, n, k, transA, transB] a shape's training step
 * spends its time in; the LM head runs `headRows` rows at a time.
 */
export function trainingGemms(config, batch, seq, headRows = batch * seq) {
  const N = batch * seq;
  const C = config.hiddenSize;
  const F = config.intermediateSize;
  const Q = config.numAttentionHeads * config.headDim;
  const V = config.vocabSize;
  return [
    [`q fwd ${N}x${Q}x${C} NT`, N, Q, C, false, true],
    [`up fwd ${N}x${F}x${C} NT`, N, F, C, false, true],
    [`down fwd ${N}x${C}x${F} NT`, N, C, F, false, true],
    [`up dX ${N}x${C}x${F} NN`, N, C, F, false, false],
    [`down dX ${N}x${F}x${C} NN`, N, F, C, false, false],
    [`lm_head fwd ${headRows}x${V}x${C} NT`, headRows, V, C, false, true],
    [`lm_head dX ${headRows}x${C}x${V} NN`, headRows, C, V, false, false],
  ];
}
