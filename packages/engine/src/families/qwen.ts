// Qwen2 / Qwen2.5 (q/k/v biases) and Qwen3 (per-head q/k RMSNorm, explicit
// head_dim). Both window layers from max_window_layers on when
// use_sliding_window is set, as transformers 5 derives layer_types.
import { CHATML } from "./chat-format.js";
import { assemble, type LayerType, LLAMA_BLOCK, layerTypes, readSizes, requireActivation } from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, type GgufArchitecture, LLAMA_LAYOUT, LLAMA_NORMS, type NormNames } from "./family.js";
import type { BlockSpec, FamilyName, Slot } from "./types.js";

/** sliding_window counts only with use_sliding_window; it then applies from layer max_window_layers on. */
export function qwenWindows(keys: ConfigKeys, L: number): { types: LayerType[]; window: number | null } {
  const use = keys.bool("use_sliding_window", false);
  const configured = keys.optionalInt("sliding_window");
  const window = use ? configured : null;
  const from = keys.optionalInt("max_window_layers") ?? L;
  const types = layerTypes(keys, L, () =>
    Array.from({ length: L }, (_, l) =>
      window !== null && l >= from ? "sliding_attention" : "full_attention",
    ),
  );
  return { types, window };
}

/** llama.cpp's qwen2 and qwen3 (each its own architecture): half-offset rope, no sliding window. */
const QWEN_GGUF: Omit<GgufArchitecture, "arch"> = {
  rope: "neox",
  ropeFactors: [],
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

function qwenFamily(
  name: FamilyName,
  architecture: string,
  modelType: string,
  block: (keys: ConfigKeys) => BlockSpec,
  norms: NormNames,
): Family {
  return {
    name,
    architectures: [architecture],
    modelTypes: [modelType],
    ...LLAMA_LAYOUT,
    norms,
    gguf: { ...QWEN_GGUF, arch: name },
    ollama: { chatFormats: [CHATML] },
    parse(keys: ConfigKeys, arch: string) {
      const sizes = readSizes(keys);
      requireActivation(keys, "hidden_act", ["silu"], "silu");
      keys.only("use_mrope", false, "multimodal rotary embeddings are for the vision-language models");
      const { types, window } = qwenWindows(keys, sizes.numHiddenLayers);
      return assemble(keys, {
        family: name,
        architecture: arch,
        sizes,
        block: block(keys),
        types,
        slidingWindow: window,
      });
    },
  };
}

function qwen2Block(): BlockSpec {
  return { ...LLAMA_BLOCK, biases: ["q", "k", "v"] };
}

function qwen3Block(keys: ConfigKeys): BlockSpec {
  const biases: Slot[] = keys.bool("attention_bias", false) ? ["q", "k", "v", "o"] : [];
  return { ...LLAMA_BLOCK, qkNorm: "head", biases };
}

export const qwen2 = qwenFamily("qwen2", "Qwen2ForCausalLM", "qwen2", qwen2Block, LLAMA_NORMS);
export const qwen3 = qwenFamily("qwen3", "Qwen3ForCausalLM", "qwen3", qwen3Block, {
  ...LLAMA_NORMS,
  qNorm: "self_attn.q_norm",
  kNorm: "self_attn.k_norm",
});
