// SmolLM3 (layers without rotary embeddings), OLMo 2 (norms after attention
// and MLP instead of before, q/k norms over the whole projection) and Granite
// (embedding, attention, residual and logit multipliers).

import { CHATML, type ChatFormat, turns } from "./chat-format.js";
import {
  assemble,
  type LayerType,
  LLAMA_BLOCK,
  layerTypes,
  llamaBiases,
  readSizes,
  requireActivation,
} from "./common.js";
import type { ConfigKeys } from "./config-keys.js";
import { type Family, type GgufArchitecture, LLAMA_LAYOUT } from "./family.js";
import { LLAMA_GGUF } from "./llama.js";
import type { Slot } from "./types.js";

export const OLMO2_CHAT: ChatFormat = {
  name: "OLMo 2",
  marker: "<|user|>",
  system: ["<|system|>\n", "\n"],
  user: ["<|user|>\n", "\n"],
  assistant: ["<|assistant|>\n", "<|endoftext|>\n"],
  stop: ["<|endoftext|>", "<|user|>"],
};

export const GRANITE_CHAT: ChatFormat = {
  name: "Granite",
  marker: "<|start_of_role|>",
  ...turns((role) => `<|start_of_role|>${role}<|end_of_role|>`, "<|end_of_text|>\n"),
  stop: ["<|end_of_text|>", "<|start_of_role|>"],
};

/** llama.cpp's smollm3, olmo2 and granite differ from its llama where they say so. */
const LLAMA_LIKE: Omit<GgufArchitecture, "arch"> = { ...LLAMA_GGUF, ropeFactors: [] };

export const smollm3: Family = {
  name: "smollm3",
  architectures: ["SmolLM3ForCausalLM"],
  modelTypes: ["smollm3"],
  ...LLAMA_LAYOUT,
  gguf: { ...LLAMA_LIKE, arch: "smollm3", noRopeEvery: 4 },
  // SmolLM3's templates write system metadata ChatML's affixes do not: CHATML leaves them to the GGUF
  ollama: { chatFormats: [CHATML] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys);
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    const L = sizes.numHiddenLayers;
    const interval = keys.int("no_rope_layer_interval", 4);
    const given = keys.get("no_rope_layers");
    // no_rope_layers[l] is 1 where layer l USES rotary embeddings (transformers' naming)
    let usesRope: number[];
    if (given === undefined || given === null) {
      usesRope = Array.from({ length: L }, (_, l) => ((l + 1) % interval !== 0 ? 1 : 0));
    } else if (Array.isArray(given) && given.length === L && given.every((v) => v === 0 || v === 1)) {
      usesRope = given as number[];
    } else {
      throw keys.refuse(`"no_rope_layers" must list 0 or 1 for each of the ${L} layers`);
    }
    const use = keys.bool("use_sliding_window", false);
    const window = keys.optionalInt("sliding_window");
    keys.accept("max_window_layers");
    const types = layerTypes(keys, L, () =>
      Array.from(
        { length: L },
        (_, l): LayerType =>
          use && window !== null && !usesRope[l] ? "sliding_attention" : "full_attention",
      ),
    );
    return assemble(keys, {
      family: "smollm3",
      architecture,
      sizes,
      block: { ...LLAMA_BLOCK, biases: llamaBiases(keys) },
      types,
      slidingWindow: window,
      noRope: usesRope.map((v) => v === 0),
    });
  },
};

export const olmo2: Family = {
  name: "olmo2",
  architectures: ["Olmo2ForCausalLM"],
  modelTypes: ["olmo2"],
  ...LLAMA_LAYOUT,
  gguf: {
    ...LLAMA_LIKE,
    arch: "olmo2",
    rope: "neox",
    slidingWindow: true,
    writesTiedOutput: true,
    attentionWithoutNorm: true,
  },
  ollama: { chatFormats: [OLMO2_CHAT] },
  norms: {
    attnOutNorm: "post_attention_layernorm",
    mlpOutNorm: "post_feedforward_layernorm",
    qNorm: "self_attn.q_norm",
    kNorm: "self_attn.k_norm",
  },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys, { rmsNormEps: 1e-5 });
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    const biases: Slot[] = keys.bool("attention_bias", false) ? ["q", "k", "v", "o"] : [];
    return assemble(keys, {
      family: "olmo2",
      architecture,
      sizes,
      block: {
        attnNorm: false,
        attnOutNorm: true,
        mlpNorm: false,
        mlpOutNorm: true,
        qkNorm: "projection",
        activation: "silu",
        biases,
      },
    });
  },
};

export const granite: Family = {
  name: "granite",
  architectures: ["GraniteForCausalLM"],
  modelTypes: ["granite"],
  ...LLAMA_LAYOUT,
  gguf: { ...LLAMA_LIKE, arch: "granite", ropeFactors: ["llama3"], scales: true },
  ollama: { chatFormats: [GRANITE_CHAT] },
  parse(keys: ConfigKeys, architecture: string) {
    const sizes = readSizes(keys);
    requireActivation(keys, "hidden_act", ["silu"], "silu");
    return assemble(keys, {
      family: "granite",
      architecture,
      sizes,
      block: { ...LLAMA_BLOCK, biases: llamaBiases(keys) },
      embeddingScale: keys.num("embedding_multiplier", 1),
      attentionScale: keys.num("attention_multiplier", 1),
      residualScale: keys.num("residual_multiplier", 1),
      logitScale: 1 / keys.num("logits_scaling", 1),
    });
  },
};
