// A merged model as a Hugging Face folder that transformers and vLLM load as
// they are: model.safetensors with the family's own tensor names (fused
// Phi-3 tensors fused again, Gemma's norms stored as w where it applies
// 1 + w), the base folder's config.json (its dtype key set to what was
// written), generation_config.json, tokenizer files and chat template.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { familyOf, type ModelConfig, type Slot } from "../families/index.js";
import { concatSlots, type ModelWeights, moduleShape } from "../graph/weights.js";
import { type SafetensorsDtype, type Tensor, writeSafetensors } from "../loading/safetensors.js";

/** Files of a model folder besides its weights, copied as they are when present. */
export const MODEL_SIDE_FILES = [
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "chat_template.jinja",
  "tokenizer.model",
  "vocab.json",
  "merges.txt",
  "added_tokens.json",
] as const;

const TORCH_DTYPE: Record<SafetensorsDtype, string> = { F32: "float32", F16: "float16", BF16: "bfloat16" };

/** The weights by their checkpoint names, in the order a Hugging Face model lists them. */
export function checkpointTensors(config: ModelConfig, weights: ModelWeights): [string, Tensor][] {
  const family = familyOf(config);
  const C = config.hiddenSize;
  const out: [string, Tensor][] = [
    ["model.embed_tokens.weight", { shape: [config.vocabSize, C], data: weights.embed }],
  ];
  const stored = (w: Float32Array) => (family.normPlusOne ? w.map((x) => x - 1) : w);
  weights.layers.forEach((w, l) => {
    const p = `model.layers.${l}`;
    const n = family.norms;
    const norms: [string | undefined, Float32Array | null][] = [
      [n.attnNorm, w.attnNorm],
      [n.attnOutNorm, w.attnOutNorm],
      [n.mlpNorm, w.mlpNorm],
      [n.mlpOutNorm, w.mlpOutNorm],
      [n.qNorm, w.qNorm],
      [n.kNorm, w.kNorm],
    ];
    for (const [name, data] of norms) {
      if (name && data) out.push([`${p}.${name}.weight`, { shape: [data.length], data: stored(data) }]);
    }
    for (const module of family.modules) {
      const { in: cols, out: rows } = moduleShape(config, module);
      const parts = module.slots.map((s) => w[s]);
      const data = parts.length === 1 ? parts[0] : concatSlots(parts);
      const base = `${p}.${module.parent}.${module.name}`;
      out.push([`${base}.weight`, { shape: [rows, cols], data }]);
      const biased = module.slots.filter((s: Slot) => config.block.biases.includes(s));
      if (biased.length > 0) {
        const bias = concatSlots(
          module.slots.map(
            (s) => w.bias[s] ?? new Float32Array(moduleShape(config, { ...module, slots: [s] }).out),
          ),
        );
        out.push([`${base}.bias`, { shape: [rows], data: bias }]);
      }
    }
  });
  out.push(["model.norm.weight", { shape: [C], data: stored(weights.finalNorm) }]);
  if (!config.tieWordEmbeddings)
    out.push(["lm_head.weight", { shape: [config.vocabSize, C], data: weights.lmHead }]);
  return out;
}

/**
 * The base config.json text with its dtype key (transformers 5's "dtype", or
 * the older "torch_dtype") set to what was written. Edited as text, not
 * re-serialized: JSON.stringify would write 10.0 as 10, which transformers'
 * strict config classes refuse for float fields.
 */
export function configWithDtype(text: string, dtype: SafetensorsDtype): string {
  const value = JSON.stringify(TORCH_DTYPE[dtype]);
  let found = false;
  const edited = text.replace(/("(?:torch_)?dtype"\s*:\s*)(?:"[^"]*"|null)/g, (_, key: string) => {
    found = true;
    return `${key}${value}`;
  });
  return found ? edited : text.replace(/^(\s*\{)/, `$1\n  "dtype": ${value},`);
}

/** Shards of at most this many bytes, as transformers' save_pretrained cuts them (one file below it). */
export const SHARD_BYTES = 2 ** 31;

/**
 * The weights as model.safetensors, or past shardBytes as
 * model-0000i-of-0000n.safetensors with model.safetensors.index.json (a
 * single file over 4 GiB would not fit one Node buffer); returns the files.
 */
function writeWeights(
  out: string,
  tensors: [string, Tensor][],
  dtype: SafetensorsDtype,
  shardBytes: number,
): string[] {
  const width = dtype === "F32" ? 4 : 2;
  const shards: [string, Tensor][][] = [[]];
  let size = 0;
  let total = 0;
  for (const entry of tensors) {
    const bytes = entry[1].data.length * width;
    if (size > 0 && size + bytes > shardBytes) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1].push(entry);
    size += bytes;
    total += bytes;
  }
  if (shards.length === 1) {
    writeSafetensors(join(out, "model.safetensors"), tensors, { metadata: { format: "pt" }, dtype });
    return ["model.safetensors"];
  }
  const pad = (n: number) => String(n).padStart(5, "0");
  const names = shards.map((_, i) => `model-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  const weightMap: Record<string, string> = {};
  shards.forEach((shard, i) => {
    writeSafetensors(join(out, names[i]), shard, { metadata: { format: "pt" }, dtype });
    for (const [name] of shard) weightMap[name] = names[i];
  });
  const index = { metadata: { total_size: total }, weight_map: weightMap };
  writeFileSync(join(out, "model.safetensors.index.json"), `${JSON.stringify(index, null, 2)}\n`);
  return [...names, "model.safetensors.index.json"];
}

/** Writes the merged folder; returns the files written. */
export function writeHfFolder(
  baseDir: string,
  config: ModelConfig,
  weights: ModelWeights,
  out: string,
  dtype: SafetensorsDtype,
  shardBytes = SHARD_BYTES,
): string[] {
  mkdirSync(out, { recursive: true });
  const written: string[] = [];
  writeFileSync(
    join(out, "config.json"),
    configWithDtype(readFileSync(join(baseDir, "config.json"), "utf8"), dtype),
  );
  written.push("config.json");
  written.push(...writeWeights(out, checkpointTensors(config, weights), dtype, shardBytes));
  for (const name of MODEL_SIDE_FILES) {
    if (existsSync(join(baseDir, name))) {
      copyFileSync(join(baseDir, name), join(out, name));
      written.push(name);
    }
  }
  return written;
}
