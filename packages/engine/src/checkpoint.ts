// A Hugging Face checkpoint (model.safetensors, or shards listed in
// model.safetensors.index.json; F32, F16 or BF16) read into ModelWeights by
// the family's tensor names. Every tensor the config implies must be there
// with its shape, and every tensor there must be one the engine computes with.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "./errors.js";
import { familyOf, type ModelConfig, SLOTS, type Slot } from "./families/index.js";
import { readSafetensors, type Tensor } from "./safetensors.js";
import { type LayerWeights, type ModelWeights, moduleShape, slotRows } from "./weights.js";

function checkpointFiles(dir: string): string[] {
  const single = join(dir, "model.safetensors");
  const index = join(dir, "model.safetensors.index.json");
  if (existsSync(single)) return [single];
  if (!existsSync(index)) {
    throw new EngineError("missing_file", `${single}: not found (nor model.safetensors.index.json)`, single);
  }
  let weightMap: Record<string, string>;
  try {
    weightMap = JSON.parse(readFileSync(index, "utf8")).weight_map;
  } catch {
    throw new EngineError("invalid_file", `${index}: not valid JSON`, index);
  }
  if (!weightMap || typeof weightMap !== "object") {
    throw new EngineError("invalid_file", `${index}: has no "weight_map"`, index);
  }
  return [...new Set(Object.values(weightMap))].map((name) => join(dir, name));
}

/** Reads the safetensors file(s) of a folder into the config's weight layout. */
export function readWeights(dir: string, config: ModelConfig): ModelWeights {
  const files = checkpointFiles(dir);
  const tensors = new Map<string, Tensor & { file: string }>();
  for (const file of files) {
    for (const [name, t] of readSafetensors(file).tensors) tensors.set(name, { ...t, file });
  }
  const family = familyOf(config);
  const taken = new Set<string>();
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
    taken.add(name);
    return t.data;
  };
  const { hiddenSize: C, vocabSize: V, headDim: D } = config;
  const norm = (name: string, size: number): Float32Array => {
    const w = take(name, [size]);
    if (!family.normPlusOne) return w;
    const effective = new Float32Array(size);
    for (let i = 0; i < size; i++) effective[i] = 1 + w[i];
    return effective;
  };
  const optionalNorm = (p: string, name: string | undefined, size: number) =>
    name ? norm(`${p}.${name}.weight`, size) : null;
  const qkSizes =
    config.block.qkNorm === "head" ? [D, D] : [config.numAttentionHeads * D, config.numKeyValueHeads * D];
  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    const slots: Partial<Record<Slot, Float32Array>> = {};
    const bias: Partial<Record<Slot, Float32Array>> = {};
    for (const module of family.modules) {
      // a fused module's rows are its slots' rows, in order: split by views
      const { in: inDim, out: total } = moduleShape(config, module);
      const base = `${p}.${module.parent}.${module.name}`;
      Object.assign(slots, slotRows(config, module, take(`${base}.weight`, [total, inDim]), inDim));
      if (module.slots.some((s) => config.block.biases.includes(s))) {
        const split = slotRows(config, module, take(`${base}.bias`, [total]), 1);
        for (const slot of module.slots) if (config.block.biases.includes(slot)) bias[slot] = split[slot];
      }
    }
    for (const slot of SLOTS) {
      if (!slots[slot]) throw new Error(`family ${config.family} maps no tensor to slot ${slot}`);
    }
    const n = family.norms;
    layers.push({
      attnNorm: config.block.attnNorm ? optionalNorm(p, n.attnNorm, C) : null,
      attnOutNorm: config.block.attnOutNorm ? optionalNorm(p, n.attnOutNorm, C) : null,
      mlpNorm: config.block.mlpNorm ? optionalNorm(p, n.mlpNorm, C) : null,
      mlpOutNorm: config.block.mlpOutNorm ? optionalNorm(p, n.mlpOutNorm, C) : null,
      qNorm: config.block.qkNorm !== "none" ? optionalNorm(p, n.qNorm, qkSizes[0]) : null,
      kNorm: config.block.qkNorm !== "none" ? optionalNorm(p, n.kNorm, qkSizes[1]) : null,
      ...(slots as Record<Slot, Float32Array>),
      bias,
    });
  }
  const embed = take("model.embed_tokens.weight", [V, C]);
  const finalNorm = norm("model.norm.weight", C);
  let lmHead = embed;
  if (!config.tieWordEmbeddings) lmHead = take("lm_head.weight", [V, C]);
  else if (tensors.has("lm_head.weight")) taken.add("lm_head.weight"); // a saved copy of the tied head
  for (const [name, t] of tensors) {
    if (!taken.has(name) && !name.endsWith("rotary_emb.inv_freq")) {
      throw new EngineError(
        "unsupported_architecture",
        `${t.file}: tensor ${name} is not part of a ${config.architecture} as config.json describes it`,
        t.file,
      );
    }
  }
  return { embed, layers, finalNorm, lmHead };
}
