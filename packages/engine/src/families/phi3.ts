// Phi-3 / Phi-4-mini: fused qkv_proj and gate_up_proj (split into slots at
// load; LoRA adapts the fused modules), partial rotary embeddings, longrope,
// and a sliding window over every layer when set.

import { type ChatFormat, turns } from "./chat-format.js";
import { assemble, LLAMA_BLOCK, layerTypes, readSizes, requireActivation } from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, LLAMA_NORMS } from "./family.js";

/** Phi-4-mini's template: no newline after the role or the end marker. */
export const PHI4_CHAT: ChatFormat = {
  name: "Phi-4",
  marker: "'<|' + message['role'] + '|>'",
  ...turns((role) => `<|${role}|>`, "<|end|>"),
  stop: ["<|end|>", "<|user|>", "<|assistant|>"],
};

export const PHI3_CHAT: ChatFormat = {
  name: "Phi-3",
  marker: "<|end|>",
  ...turns((role) => `<|${role}|>\n`, "<|end|>\n"),
  stop: ["<|end|>", "<|user|>", "<|assistant|>"],
};

export const phi3: Family = {
  name: "phi3",
  architectures: ["Phi3ForCausalLM"],
  modelTypes: ["phi3"],
  norms: LLAMA_NORMS,
  normPlusOne: false,
  modules: [
    { name: "qkv_proj", parent: "self_attn", slots: ["q", "k", "v"] },
    { name: "o_proj", parent: "self_attn", slots: ["o"] },
    { name: "gate_up_proj", parent: "mlp", slots: ["gate", "up"] },
    { name: "down_proj", parent: "mlp", slots: ["down"] },
  ],
  gguf: {
    arch: "phi3",
    rope: "neox",
    ropeFactors: ["longrope"],
    slidingWindow: false,
    noRopeEvery: 0,
    scales: false,
    embeddingScaled: false,
    finalLogitSoftcap: false,
    fusedGateUp: true,
    biases: false,
    writesTiedOutput: false,
    attentionWithoutNorm: false,
  },
  ollama: { chatFormats: [PHI4_CHAT, PHI3_CHAT] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys, { rmsNormEps: 1e-5, maxPositionEmbeddings: 4096 });
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    // keys Phi-4-mini's own modelling code reads; transformers' Phi-3 has no such switches
    keys.only("attention_bias", false);
    keys.only("mlp_bias", false);
    keys.only("lm_head_bias", false);
    keys.only("full_attn_mod", 1);
    keys.only("interpolate_factor", 1);
    const window = keys.optionalInt("sliding_window");
    const partial = keys.num("partial_rotary_factor", 1);
    const original = keys.optionalInt("original_max_position_embeddings") ?? undefined;
    return assemble(keys, {
      family: "phi3",
      architecture,
      sizes,
      block: LLAMA_BLOCK,
      types: layerTypes(keys, sizes.numHiddenLayers, () =>
        Array(sizes.numHiddenLayers).fill(window ? "sliding_attention" : "full_attention"),
      ),
      slidingWindow: window,
      partialRotaryFactor: partial,
      originalMaxPositionEmbeddings: original,
    });
  },
};
