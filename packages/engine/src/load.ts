// loadModel(dir): a Hugging Face Llama folder as it is (config.json,
// model.safetensors or a sharded model.safetensors.index.json, tokenizer files),
// optionally with a PEFT LoRA adapter applied.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readLlamaConfig } from "./config.js";
import { EngineError } from "./errors.js";
import { loraLayersOf } from "./lora.js";
import { LlamaGraph, sizesOf } from "./model.js";
import { loadAdapter } from "./peft.js";
import { readSafetensors, type Tensor } from "./safetensors.js";
import { loadTokenizer } from "./tokenizer.js";
import type { LlamaConfig, LoadModelOptions, LoraAdapter, Model, Tokenizer } from "./types.js";
import type { LayerWeights, LlamaWeights, LoraLayers } from "./weights.js";

export async function loadModel(dir: string, options: LoadModelOptions = {}): Promise<Model> {
  const config = readLlamaConfig(dir);
  const weights = readLlamaWeights(dir, config);
  const tokenizer = await loadTokenizer(dir);
  const adapter = options.adapter ? loadAdapter(options.adapter) : null;
  return new LlamaModel(dir, config, weights, tokenizer, adapter, { graph: null });
}

/** Reads the safetensors file(s) of a folder and checks every tensor the config implies. */
export function readLlamaWeights(dir: string, config: LlamaConfig): LlamaWeights {
  const tensors = new Map<string, Tensor & { file: string }>();
  const single = join(dir, "model.safetensors");
  const index = join(dir, "model.safetensors.index.json");
  let files: string[];
  if (existsSync(single)) files = [single];
  else if (existsSync(index)) {
    let weightMap: Record<string, string>;
    try {
      weightMap = JSON.parse(readFileSync(index, "utf8")).weight_map;
    } catch {
      throw new EngineError("invalid_file", `${index}: not valid JSON`, index);
    }
    if (!weightMap || typeof weightMap !== "object") {
      throw new EngineError("invalid_file", `${index}: has no "weight_map"`, index);
    }
    files = [...new Set(Object.values(weightMap))].map((name) => join(dir, name));
  } else {
    throw new EngineError("missing_file", `${single}: not found (nor model.safetensors.index.json)`, single);
  }
  for (const file of files) {
    for (const [name, t] of readSafetensors(file).tensors) tensors.set(name, { ...t, file });
  }

  const { C, F, V, Q, K } = sizesOf(config);
  const take = (name: string, shape: number[]): Float32Array => {
    const t = tensors.get(name);
    if (!t) throw new EngineError("shape_mismatch", `${files.join(", ")}: missing tensor ${name}`, files[0]);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new EngineError(
        "shape_mismatch",
        `${t.file}: tensor ${name} has shape [${t.shape}], expected [${shape}] from config.json`,
        t.file,
      );
    }
    return t.data;
  };
  for (const [name, t] of tensors) {
    if (name.endsWith(".bias")) {
      throw new EngineError(
        "unsupported_architecture",
        `${t.file}: bias tensor ${name} is not supported`,
        t.file,
      );
    }
  }
  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    layers.push({
      inputNorm: take(`${p}.input_layernorm.weight`, [C]),
      q: take(`${p}.self_attn.q_proj.weight`, [Q, C]),
      k: take(`${p}.self_attn.k_proj.weight`, [K, C]),
      v: take(`${p}.self_attn.v_proj.weight`, [K, C]),
      o: take(`${p}.self_attn.o_proj.weight`, [C, Q]),
      postNorm: take(`${p}.post_attention_layernorm.weight`, [C]),
      gate: take(`${p}.mlp.gate_proj.weight`, [F, C]),
      up: take(`${p}.mlp.up_proj.weight`, [F, C]),
      down: take(`${p}.mlp.down_proj.weight`, [C, F]),
    });
  }
  const embed = take("model.embed_tokens.weight", [V, C]);
  return {
    embed,
    layers,
    finalNorm: take("model.norm.weight", [C]),
    lmHead: config.tieWordEmbeddings ? embed : take("lm_head.weight", [V, C]),
  };
}

/** Views of one model share the base weights and one forward graph (logits() is synchronous). */
interface SharedGraph {
  graph: LlamaGraph | null;
}

export class LlamaModel implements Model {
  readonly lora: LoraLayers | null;

  constructor(
    readonly dir: string,
    readonly config: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly tokenizer: Tokenizer,
    readonly adapter: LoraAdapter | null,
    private readonly shared: SharedGraph,
  ) {
    this.lora = adapter ? loraLayersOf(adapter, config, "adapter") : null;
  }

  logits(tokenIds: ArrayLike<number>): Float32Array {
    const V = this.config.vocabSize;
    if (tokenIds.length === 0) throw new EngineError("invalid_argument", "logits: tokenIds is empty");
    for (let i = 0; i < tokenIds.length; i++) {
      const id = tokenIds[i];
      if (!Number.isInteger(id) || id < 0 || id >= V) {
        throw new EngineError(
          "invalid_argument",
          `logits: tokenIds[${i}] = ${id} is not a token id in [0, ${V})`,
        );
      }
    }
    this.shared.graph ??= new LlamaGraph(this.config, this.weights, { inferenceOnly: true });
    return this.shared.graph.logits(tokenIds, this.lora);
  }

  withAdapter(adapter: LoraAdapter | null): Model {
    return new LlamaModel(this.dir, this.config, this.weights, this.tokenizer, adapter, this.shared);
  }
}
