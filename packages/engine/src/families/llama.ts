// Llama 1/2/3.x and Mistral: pre-norm SwiGLU blocks; Llama's optional
// attention/MLP biases, Mistral's sliding window over every layer.
import { assemble, LLAMA_BLOCK, layerTypes, llamaBiases, readSizes, requireActivation } from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, LLAMA_LAYOUT } from "./family.js";

export const llama: Family = {
  name: "llama",
  architectures: ["LlamaForCausalLM"],
  modelTypes: ["llama"],
  ...LLAMA_LAYOUT,
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
