// A Hugging Face checkpoint (model.safetensors, or shards listed in
// model.safetensors.index.json; F32, F16 or BF16) read into ModelWeights by
// the family's tensor names. Every tensor the config implies must be there
// with its shape, and every tensor there must be one the engine computes with.
// Tensors are read one at a time, and a matrix can be read a few rows at a
// time, so a reader that converts as it reads (serving formats) never holds
// the model, nor even one whole matrix, in float32.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "../errors.js";
import { familyOf, type ModelConfig, SLOTS, type Slot } from "../families/index.js";
import {
  type LayerWeights,
  type ModelWeights,
  moduleShape,
  type ProjectionWeight,
  projectionShape,
  slotRows,
} from "../graph/weights.js";
import { type LazyTensor, openSafetensors } from "./safetensors.js";

/** A matrix of the checkpoint [rows, cols], read whole or a few rows at a time. */
export interface MatrixSource {
  readonly rows: number;
  readonly cols: number;
  /** The whole matrix, in a new array. */
  read(): Float32Array;
  /** Rows first..first+count-1, in a buffer the next call reuses. */
  readRows(first: number, count: number): Float32Array;
}

/** How a matrix of the checkpoint is held: read whole (fp32), or converted for serving as it is read. */
export type MatrixConversion<P extends ProjectionWeight> = (matrix: MatrixSource) => P | Promise<P>;

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

/** Reads the safetensors file(s) of a folder into the config's weight layout, in fp32. */
export function readWeights(dir: string, config: ModelConfig): Promise<ModelWeights> {
  return readWeightsAs(dir, config, (matrix) => matrix.read());
}

/**
 * The folder's weights with every projection, the embeddings and the LM head
 * passed through `convert` as soon as it is read (a fused checkpoint tensor:
 * each slot's rows); norms and biases stay fp32.
 */
export async function readWeightsAs<P extends ProjectionWeight>(
  dir: string,
  config: ModelConfig,
  convert: MatrixConversion<P>,
): Promise<ModelWeights<P>> {
  const files = checkpointFiles(dir);
  const tensors = new Map<string, LazyTensor & { file: string }>();
  for (const file of files) {
    for (const [name, t] of openSafetensors(file).tensors) tensors.set(name, { ...t, file });
  }
  const family = familyOf(config);
  const taken = new Set<string>();
  const tensor = (name: string, shape: number[]): LazyTensor => {
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
    return t;
  };
  const take = (name: string, shape: number[]) => tensor(name, shape).read();
  // one buffer for every readRows: a conversion reads a slice of rows, converts it, reads the next
  let rowsBuffer = new Float32Array(0);
  let halvesBuffer = new Uint16Array(0);
  const matrix = (t: LazyTensor, firstRow: number, rows: number, cols: number): MatrixSource => ({
    rows,
    cols,
    read: () => t.readInto(firstRow * cols, new Float32Array(rows * cols)),
    readRows: (first, count) => {
      if (first < 0 || first + count > rows)
        throw new RangeError(`rows ${first}..${first + count} of ${rows}`);
      if (rowsBuffer.length < count * cols) {
        rowsBuffer = new Float32Array(count * cols);
        halvesBuffer = new Uint16Array(count * cols);
      }
      const out = rowsBuffer.subarray(0, count * cols);
      return t.readInto((firstRow + first) * cols, out, halvesBuffer);
    },
  });
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
  const layers: LayerWeights<P>[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    const slots: Partial<Record<Slot, P>> = {};
    const bias: Partial<Record<Slot, Float32Array>> = {};
    for (const module of family.modules) {
      // a fused module's rows are its slots' rows, in order
      const { in: inDim, out: total } = moduleShape(config, module);
      const base = `${p}.${module.parent}.${module.name}`;
      const weight = tensor(`${base}.weight`, [total, inDim]);
      let row = 0;
      for (const slot of module.slots) {
        const rows = projectionShape(config, slot).out;
        slots[slot] = await convert(matrix(weight, row, rows, inDim));
        row += rows;
      }
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
      ...(slots as Record<Slot, P>),
      bias,
    });
  }
  const embed = await convert(matrix(tensor("model.embed_tokens.weight", [V, C]), 0, V, C));
  const finalNorm = norm("model.norm.weight", C);
  let lmHead = embed;
  if (!config.tieWordEmbeddings) lmHead = await convert(matrix(tensor("lm_head.weight", [V, C]), 0, V, C));
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
