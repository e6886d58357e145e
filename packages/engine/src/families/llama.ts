// Llama 1/2/3.x and Mistral: pre-norm SwiGLU blocks; Llama's optional
// attention/MLP biases, Mistral's sliding window over every layer.
import { CHATML, type ChatFormat, turns } from "./chat-format.js";
import { assemble, LLAMA_BLOCK, layerTypes, llamaBiases, readSizes, requireActivation } from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, type GgufArchitecture, LLAMA_LAYOUT } from "./family.js";

/** llama.cpp's llama: adjacent-pair rope, Llama 3's rope_freqs, no sliding window. */
export const LLAMA_GGUF: GgufArchitecture = {
  arch: "llama",
  rope: "norm",
  ropeFactors: ["llama3"],
  slidingWindow: false,
  noRopeEvery: 0,
  scales: false,
  embeddingScaled: false,
  finalLogitSoftcap: false,
  fusedGateUp: false,
  biases: true,
  writesTiedOutput: false,
  attentionWithoutNorm: false,
};

export const LLAMA3_CHAT: ChatFormat = {
  name: "Llama 3",
  marker: "<|start_header_id|>",
  ...turns((role) => `<|start_header_id|>${role}<|end_header_id|>\n\n`, "<|eot_id|>"),
  stop: ["<|eot_id|>", "<|start_header_id|>"],
};

export const llama: Family = {
  name: "llama",
  architectures: ["LlamaForCausalLM"],
  modelTypes: ["llama"],
  ...LLAMA_LAYOUT,
  gguf: LLAMA_GGUF,
  // Llama 3's own, and ChatML of Llama-architecture models such as SmolLM2 (the bundled model)
  ollama: { chatFormats: [LLAMA3_CHAT, CHATML] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys);
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    keys.only("rope_interleaved", false, "only rotate_half rotary embeddings");
    return assemble(keys, {
      family: "llama",
      architecture,
      sizes,
      block: { ...LLAMA_BLOCK, biases: llamaBiases(keys) },
    });
  },
};

export const mistral: Family = {
  name: "mistral",
  architectures: ["MistralForCausalLM"],
  modelTypes: ["mistral"],
  ...LLAMA_LAYOUT,
  gguf: LLAMA_GGUF,
  // Mistral's [INST] templates are left to the GGUF's own chat template
  ollama: { chatFormats: [] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys);
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    const window = keys.optionalInt("sliding_window");
    return assemble(keys, {
      family: "mistral",
      architecture,
      sizes,
      block: LLAMA_BLOCK,
      types: layerTypes(keys, sizes.numHiddenLayers, () =>
        Array(sizes.numHiddenLayers).fill(window ? "sliding_attention" : "full_attention"),
      ),
      slidingWindow: window,
    });
  },
};
