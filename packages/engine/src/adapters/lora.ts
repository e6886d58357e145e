// LoRA adapters in memory. A LoraAdapter holds PEFT-named tensors, one A/B
// pair per adapted module (PEFT's names: q_proj, or Phi-3's fused qkv_proj);
// LoraLayers (weights.ts) is a per-layer, per-slot view of the same arrays that
// the graph reads, so an optimizer step on the adapter's tensors is seen by the
// graph directly. A fused module's slots share its A and split its B by rows.
import { EngineError } from "../errors.js";
import { type LoraModule, loraModulesOf, type ModelConfig, type Slot } from "../families/index.js";
import { type LoraLayers, type LoraPair, moduleShape, slotRows } from "../graph/weights.js";
import { Rng } from "../rng.js";
import type { LoraAdapter, LoraSpec } from "../types.js";

/** PEFT's tensor name for one LoRA factor, e.g. base_model.model.model.layers.3.mlp.up_proj.lora_B.weight. */
export function loraTensorName(layer: number, module: LoraModule, factor: "A" | "B"): string {
  return `base_model.model.model.layers.${layer}.${module.parent}.${module.name}.lora_${factor}.weight`;
}

/**
 * The adapted modules of a target list: PEFT module names of this model's
 * family, or "all-linear" (every linear layer but the output head, as PEFT).
 * Returned in the family's order; an unknown name is refused.
 */
export function resolveTargetModules(
  config: ModelConfig,
  targets: readonly string[] | "all-linear",
): string[] {
  const modules = loraModulesOf(config);
  const names = modules.map((m) => m.name);
  if (targets === "all-linear") return names;
  if (!Array.isArray(targets) || targets.length === 0) {
    throw new EngineError("invalid_argument", "lora.targetModules must name at least one module");
  }
  for (const t of targets) {
    if (t === "all-linear" && targets.length === 1) return names;
    if (!names.includes(t)) {
      throw new EngineError(
        "invalid_argument",
        `lora.targetModules: "${t}" is not a linear layer of ${config.architecture} (one of ${names.join(", ")}, or "all-linear")`,
      );
    }
  }
  return names.filter((n) => targets.includes(n));
}

function modulesOf(config: ModelConfig, spec: LoraSpec): LoraModule[] {
  const wanted = resolveTargetModules(config, spec.targetModules);
  return loraModulesOf(config).filter((m) => wanted.includes(m.name));
}

export function validateLoraSpec(spec: LoraSpec, config?: ModelConfig): void {
  if (!Number.isInteger(spec.r) || spec.r <= 0) {
    throw new EngineError("invalid_argument", `lora.r must be a positive integer (got ${spec.r})`);
  }
  if (!(typeof spec.alpha === "number" && spec.alpha > 0)) {
    throw new EngineError("invalid_argument", `lora.alpha must be a positive number (got ${spec.alpha})`);
  }
  if (!Array.isArray(spec.targetModules) || spec.targetModules.length === 0) {
    throw new EngineError("invalid_argument", "lora.targetModules must name at least one module");
  }
  if (config) resolveTargetModules(config, spec.targetModules);
}

/**
 * A fresh adapter initialised like PEFT: A ~ kaiming_uniform(a=√5), i.e.
 * U(-1/√in, 1/√in), from the seed; B = 0 so the adapter starts as the identity.
 */
export function initLoraAdapter(config: ModelConfig, spec: LoraSpec, seed: number): LoraAdapter {
  validateLoraSpec(spec, config);
  const modules = modulesOf(config, spec);
  const rng = new Rng(seed);
  const tensors = new Map<string, Float32Array>();
  for (let l = 0; l < config.numHiddenLayers; l++) {
    for (const module of modules) {
      const { in: fanIn, out } = moduleShape(config, module);
      const bound = 1 / Math.sqrt(fanIn);
      const a = new Float32Array(spec.r * fanIn);
      for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
      tensors.set(loraTensorName(l, module, "A"), a);
      tensors.set(loraTensorName(l, module, "B"), new Float32Array(out * spec.r));
    }
  }
  return { spec: { ...spec, targetModules: modules.map((m) => m.name) }, tensors };
}

/** The per-layer, per-slot view of an adapter's tensors (no copies); checks every shape. */
export function loraLayersOf(adapter: LoraAdapter, config: ModelConfig, file = "adapter"): LoraLayers {
  const { r, alpha } = adapter.spec;
  const modules = modulesOf(config, adapter.spec);
  const layers: Partial<Record<Slot, LoraPair>>[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const pairs: Partial<Record<Slot, LoraPair>> = {};
    for (const module of modules) {
      const { in: fanIn, out } = moduleShape(config, module);
      const a = adapter.tensors.get(loraTensorName(l, module, "A"));
      const b = adapter.tensors.get(loraTensorName(l, module, "B"));
      if (!a || !b) {
        throw new EngineError(
          "shape_mismatch",
          `${file}: missing tensor ${loraTensorName(l, module, a ? "B" : "A")}`,
          file,
        );
      }
      if (a.length !== r * fanIn || b.length !== out * r) {
        throw new EngineError(
          "shape_mismatch",
          `${file}: layer ${l} ${module.name} LoRA factors have ${a.length} and ${b.length} values; expected A [${r}, ${fanIn}] and B [${out}, ${r}]`,
          file,
        );
      }
      // the slots of a fused module share its A and split its B by rows
      const bs = slotRows(config, module, b, r);
      for (const slot of module.slots) pairs[slot] = { a, b: bs[slot] as Float32Array };
    }
    layers.push(pairs);
  }
  return { r, scale: alpha / r, layers };
}

/** An adapter of zeros shaped like this one (gradients): view it with loraLayersOf. */
export function zerosLike(adapter: LoraAdapter): LoraAdapter {
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of adapter.tensors) tensors.set(name, new Float32Array(t.length));
  return { spec: adapter.spec, tensors };
}

/** Every parameter array of an adapter, in its tensor order (each array once, fused modules included). */
export function loraParams(adapter: LoraAdapter): Float32Array[] {
  return [...adapter.tensors.values()];
}
