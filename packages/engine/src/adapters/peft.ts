// Adapters on disk in Hugging Face PEFT's layout: adapter_config.json plus
// adapter_model.safetensors with PEFT tensor names, so PEFT and vLLM load what
// we write and we load what PEFT writes.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "../errors.js";
import { readSafetensors, writeSafetensors } from "../loading/safetensors.js";
import type { LoraAdapter } from "../types.js";
import { validateLoraSpec } from "./lora.js";

export interface SaveAdapterOptions {
  /** Written as base_model_name_or_path (a hub id or the base model's folder). */
  baseModelName?: string;
  /** Written as revision: the base model's commit on the Hub. */
  baseModelRevision?: string;
}

// lora_A / lora_B of one module; PEFT's in-memory names carry the adapter
// name (".lora_A.default.weight"), its saved files do not: accept both.
const TENSOR_NAME =
  /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])(?:\.default)?\.weight$/;

// Modules in the families' order (a family lists a subset), so a loaded spec reads like a made one.
const MODULE_ORDER = [
  "q_proj",
  "k_proj",
  "v_proj",
  "qkv_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "gate_up_proj",
  "down_proj",
];
const moduleRank = (name: string) => {
  const i = MODULE_ORDER.indexOf(name);
  return i < 0 ? MODULE_ORDER.length : i;
};

/**
 * PEFT's rule for a list of target names: a module is adapted when its path
 * (e.g. model.layers.0.mlp.down_proj) is a target or ends with "." + a target,
 * so "down_proj" and "model.layers.0.mlp.down_proj" both name it.
 */
function targetedBy(targets: string[], path: string): boolean {
  return targets.some((t) => path === t || path.endsWith(`.${t}`));
}

export function saveAdapter(adapter: LoraAdapter, dir: string, options: SaveAdapterOptions = {}): void {
  mkdirSync(dir, { recursive: true });
  const { r, alpha, targetModules } = adapter.spec;
  const config = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: options.baseModelName ?? null,
    bias: "none",
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: alpha,
    lora_dropout: 0.0,
    megatron_config: null,
    megatron_core: "megatron.core",
    modules_to_save: null,
    peft_type: "LORA",
    r,
    rank_pattern: {},
    revision: options.baseModelRevision ?? null,
    target_modules: [...targetModules],
    task_type: "CAUSAL_LM",
    use_dora: false,
    use_rslora: false,
  };
  writeFileSync(join(dir, "adapter_config.json"), `${JSON.stringify(config, null, 2)}\n`);
  const shapes = new Map<string, number[]>();
  const tensors = [...adapter.tensors.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, data] of tensors) {
    shapes.set(name, name.includes(".lora_A.") ? [r, data.length / r] : [data.length / r, r]);
  }
  writeSafetensors(
    join(dir, "adapter_model.safetensors"),
    tensors.map(([name, data]) => [name, { shape: shapes.get(name) as number[], data }]),
    { metadata: { format: "pt" } },
  );
}

export function loadAdapter(dir: string): LoraAdapter {
  const configFile = join(dir, "adapter_config.json");
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(configFile, "utf8"));
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    throw new EngineError(
      missing ? "missing_file" : "invalid_file",
      missing ? `${configFile}: not found` : `${configFile}: not valid JSON`,
      configFile,
    );
  }
  const refuse = (why: string) => new EngineError("invalid_file", `${configFile}: ${why}`, configFile);
  if (raw.peft_type !== "LORA")
    throw refuse(`peft_type ${JSON.stringify(raw.peft_type)} is not supported (only "LORA")`);
  if (raw.use_dora === true) throw refuse("use_dora: true is not supported");
  if (raw.use_rslora === true) throw refuse("use_rslora: true is not supported");
  if (raw.fan_in_fan_out === true) throw refuse("fan_in_fan_out: true is not supported");
  if (raw.bias !== undefined && raw.bias !== "none")
    throw refuse(`bias ${JSON.stringify(raw.bias)} is not supported`);
  for (const key of ["rank_pattern", "alpha_pattern"]) {
    const v = raw[key];
    if (v && typeof v === "object" && Object.keys(v).length > 0) throw refuse(`${key} is not supported`);
  }
  if (raw.layers_to_transform != null) throw refuse("layers_to_transform is not supported");
  for (const key of ["use_qalora", "use_bdlora"])
    if (raw[key] === true) throw refuse(`${key}: true is not supported`);
  for (const key of [
    "modules_to_save",
    "exclude_modules",
    "target_parameters",
    "trainable_token_indices",
    "alora_invocation_tokens",
    "layer_replication",
    "arrow_config",
    "kasa_config",
    "monteclora_config",
  ]) {
    const v = raw[key];
    if (v != null && !(Array.isArray(v) && v.length === 0)) throw refuse(`${key} is not supported`);
  }
  if (raw.lora_bias === true) throw refuse("lora_bias: true is not supported");
  const listed = raw.target_modules;
  if (listed !== "all-linear" && !(Array.isArray(listed) && listed.every((t) => typeof t === "string"))) {
    throw refuse('target_modules must be a list of module names or "all-linear"');
  }

  const r = raw.r as number;
  const alpha = raw.lora_alpha as number;
  try {
    validateLoraSpec({ r, alpha, targetModules: ["(checked against the model when applied)"] });
  } catch (error) {
    throw refuse((error as Error).message);
  }

  // the adapted modules are those with tensors (target_modules may name more, as PEFT allows)
  const modules: string[] = [];
  const weightsFile = join(dir, "adapter_model.safetensors");
  const file = readSafetensors(weightsFile);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of file.tensors) {
    const match = TENSOR_NAME.exec(name);
    if (!match) {
      throw new EngineError(
        "invalid_file",
        `${weightsFile}: unexpected tensor ${name} (only LoRA A/B factors are supported)`,
        weightsFile,
      );
    }
    const [, layer, group, target, factor] = match;
    if (
      listed !== "all-linear" &&
      !targetedBy(listed as string[], `model.layers.${layer}.${group}.${target}`)
    ) {
      throw new EngineError(
        "shape_mismatch",
        `${weightsFile}: tensor ${name} is not among target_modules`,
        weightsFile,
      );
    }
    if (!modules.includes(target)) modules.push(target);
    const expectRank = factor === "A" ? t.shape[0] : t.shape[1];
    if (t.shape.length !== 2 || expectRank !== r) {
      throw new EngineError(
        "shape_mismatch",
        `${weightsFile}: tensor ${name} has shape [${t.shape}], expected rank ${r} in dimension ${factor === "A" ? 0 : 1}`,
        weightsFile,
      );
    }
    tensors.set(`base_model.model.model.layers.${layer}.${group}.${target}.lora_${factor}.weight`, t.data);
  }
  if (modules.length === 0) throw refuse(`${weightsFile} holds no LoRA tensors`);
  modules.sort((a, b) => moduleRank(a) - moduleRank(b));
  return { spec: { r, alpha, targetModules: modules }, tensors };
}
