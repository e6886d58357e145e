// Gemma 3 text: GeGLU (gelu, tanh approximation), (1 + w) RMSNorm, four norms
// per layer, √hidden embedding scale, query_pre_attn_scalar, per-head q/k norms,
// sliding-window layers with their own rope base, optional final logit softcap.

import type { ChatFormat } from "./chat-format.js";
import {
  assemble,
  classicRope,
  type LayerType,
  layerTypes,
  readSizes,
  requireActivation,
  ropeParameters,
} from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, SEPARATE_PROJECTIONS } from "./family.js";
import type { Slot } from "./types.js";

export const GEMMA_CHAT: ChatFormat = {
  name: "Gemma",
  marker: "<start_of_turn>",
  // Gemma has no system role: its template puts the system text at the start of the first user turn
  system: ["<start_of_turn>user\n", "\n\n"],
  user: ["<start_of_turn>user\n", "<end_of_turn>\n"],
  assistant: ["<start_of_turn>model\n", "<end_of_turn>\n"],
  stop: ["<end_of_turn>"],
  systemJoinsUser: true,
};

export const gemma3: Family = {
  name: "gemma3",
  architectures: ["Gemma3ForCausalLM"],
  modelTypes: ["gemma3_text"],
  norms: {
    attnNorm: "input_layernorm",
    attnOutNorm: "post_attention_layernorm",
    mlpNorm: "pre_feedforward_layernorm",
    mlpOutNorm: "post_feedforward_layernorm",
    qNorm: "self_attn.q_norm",
    kNorm: "self_attn.k_norm",
  },
  normPlusOne: true,
  modules: SEPARATE_PROJECTIONS,
  // llama.cpp's gemma3 fixes the attention scale at 1/√head_dim: the export folds query_pre_attn_scalar into the q norm
  gguf: {
    arch: "gemma3",
    rope: "neox",
    ropeFactors: [],
    slidingWindow: true,
    noRopeEvery: 0,
    scales: false,
    embeddingScaled: true,
    finalLogitSoftcap: true,
    fusedGateUp: false,
    biases: true,
    writesTiedOutput: false,
    attentionWithoutNorm: false,
  },
  ollama: { chatFormats: [GEMMA_CHAT] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys, { headDim: 256, tieWordEmbeddings: true, maxPositionEmbeddings: 131072 });
    requireActivation(keys, "hidden_activation", ["gelu_pytorch_tanh"], "gelu_pytorch_tanh");
    keys.only("hidden_act", "gelu_pytorch_tanh", "Gemma 3 reads hidden_activation");
    keys.only("attn_logit_softcapping", null, "attention logit soft-capping is not supported");
    keys.only("use_bidirectional_attention", false, "only causal attention");
    const biases: Slot[] = keys.bool("attention_bias", false) ? ["q", "k", "v", "o"] : [];
    const L = sizes.numHiddenLayers;
    const pattern = keys.optionalInt("sliding_window_pattern") ?? 6;
    const types = layerTypes(keys, L, () =>
      Array.from(
        { length: L },
        (_, l): LayerType => ((l + 1) % pattern ? "sliding_attention" : "full_attention"),
      ),
    );
    const window = keys.int("sliding_window", 4096);
    // classic form: full layers use rope_theta + rope_scaling, sliding layers rope_local_base_freq unscaled
    const local = keys.num("rope_local_base_freq", 10000);
    const rope = ropeParameters(keys, (type) =>
      type === "full_attention" ? classicRope(keys) : { rope_type: "default", rope_theta: local },
    );
    const softcap = keys.get("final_logit_softcapping");
    return assemble(keys, {
      family: "gemma3",
      architecture,
      sizes,
      block: {
        attnNorm: true,
        attnOutNorm: true,
        mlpNorm: true,
        mlpOutNorm: true,
        qkNorm: "head",
        activation: "gelu_tanh",
        biases,
      },
      types,
      slidingWindow: window,
      rope,
      // transformers keeps √hidden as a float32 tensor in the embedding's dtype
      embeddingScale: Math.fround(Math.sqrt(sizes.hiddenSize)),
      attentionScale: keys.num("query_pre_attn_scalar", 256) ** -0.5,
      finalLogitSoftcap: softcap == null ? 0 : keys.num("final_logit_softcapping"),
    });
  },
};
