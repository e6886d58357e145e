// Writes a random Llama model folder in Hugging Face layout for tests:
// config.json, model.safetensors (F32) and a byte-level test tokenizer.
// The weights depend only on the seed and sizes.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Tensor, writeSafetensors } from "../loading/safetensors.js";
import { Rng } from "../rng.js";
import { writeTestTokenizer } from "./test-tokenizer.js";

export interface RandomModelOptions {
  hiddenSize?: number; // default 32
  intermediateSize?: number; // default 64
  numHiddenLayers?: number; // default 2
  numAttentionHeads?: number; // default 4
  numKeyValueHeads?: number; // default 2
  headDim?: number; // default hidden / heads
  ropeTheta?: number; // default 10000
  tieWordEmbeddings?: boolean; // default true
  /** BPE merges of the test tokenizer; the vocabulary is 3 specials + 256 bytes + merges. */
  merges?: number; // default 0
  seed?: number; // default 0
  /** Standard deviation of an untied lm_head (default: std). */
  headStd?: number;
  /** Standard deviation of the embeddings (default: std). */
  embedStd?: number;
  /** Standard deviation of the projection weights (default 0.02, like HF's initializer_range). */
  std?: number;
}

export async function createRandomModel(dir: string, options: RandomModelOptions = {}): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const { vocabSize } = await writeTestTokenizer(dir, { merges: options.merges ?? 0 });
  const C = options.hiddenSize ?? 32;
  const F = options.intermediateSize ?? 64;
  const L = options.numHiddenLayers ?? 2;
  const Hq = options.numAttentionHeads ?? 4;
  const Hkv = options.numKeyValueHeads ?? 2;
  const D = options.headDim ?? C / Hq;
  const tied = options.tieWordEmbeddings ?? true;
  const std = options.std ?? 0.02;
  const config = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_size: C,
    intermediate_size: F,
    num_hidden_layers: L,
    num_attention_heads: Hq,
    num_key_value_heads: Hkv,
    head_dim: D,
    hidden_act: "silu",
    rms_norm_eps: 1e-5,
    rope_theta: options.ropeTheta ?? 10000,
    rope_scaling: null,
    vocab_size: vocabSize,
    tie_word_embeddings: tied,
    max_position_embeddings: 2048,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: "float32",
  };
  writeFileSync(join(dir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);

  const rng = new Rng(options.seed ?? 0);
  const normal = (n: number, s: number) => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = rng.normal() * s;
    return out;
  };
  const norm = (n: number) => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = 1 + 0.1 * rng.normal();
    return out;
  };
  const tensors: [string, Tensor][] = [
    [
      "model.embed_tokens.weight",
      { shape: [vocabSize, C], data: normal(vocabSize * C, options.embedStd ?? std) },
    ],
  ];
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`;
    tensors.push(
      [`${p}.input_layernorm.weight`, { shape: [C], data: norm(C) }],
      [`${p}.self_attn.q_proj.weight`, { shape: [Hq * D, C], data: normal(Hq * D * C, std) }],
      [`${p}.self_attn.k_proj.weight`, { shape: [Hkv * D, C], data: normal(Hkv * D * C, std) }],
      [`${p}.self_attn.v_proj.weight`, { shape: [Hkv * D, C], data: normal(Hkv * D * C, std) }],
      [`${p}.self_attn.o_proj.weight`, { shape: [C, Hq * D], data: normal(C * Hq * D, std) }],
      [`${p}.post_attention_layernorm.weight`, { shape: [C], data: norm(C) }],
      [`${p}.mlp.gate_proj.weight`, { shape: [F, C], data: normal(F * C, std) }],
      [`${p}.mlp.up_proj.weight`, { shape: [F, C], data: normal(F * C, std) }],
      [`${p}.mlp.down_proj.weight`, { shape: [C, F], data: normal(C * F, std) }],
    );
  }
  tensors.push(["model.norm.weight", { shape: [C], data: norm(C) }]);
  if (!tied)
    tensors.push([
      "lm_head.weight",
      { shape: [vocabSize, C], data: normal(vocabSize * C, options.headStd ?? std) },
    ]);
  writeSafetensors(join(dir, "model.safetensors"), tensors, { metadata: { format: "pt" } });
}
