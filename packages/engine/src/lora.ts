// LoRA adapters in memory. A LoraAdapter holds PEFT-named tensors; LoraLayers
// (weights.ts) is a per-layer view of the same arrays that the model reads, so
// an optimizer step on the adapter's tensors is seen by the model directly.
import { EngineError } from "./errors.js";
import { Rng } from "./rng.js";
import {
  ALL_LORA_TARGETS,
  type LlamaConfig,
  type LoraAdapter,
  type LoraSpec,
  type LoraTarget,
} from "./types.js";
import { type LoraLayers, type LoraPair, projectionShape } from "./weights.js";

const ATTENTION_TARGETS = new Set<LoraTarget>(["q_proj", "k_proj", "v_proj", "o_proj"]);

/** PEFT's tensor name for one LoRA factor, e.g. base_model.model.model.layers.3.mlp.up_proj.lora_B.weight. */
export function loraTensorName(layer: number, target: LoraTarget, factor: "A" | "B"): string {
  const group = ATTENTION_TARGETS.has(target) ? "self_attn" : "mlp";
  return `base_model.model.model.layers.${layer}.${group}.${target}.lora_${factor}.weight`;
}

export function validateLoraSpec(spec: LoraSpec): void {
  if (!Number.isInteger(spec.r) || spec.r <= 0) {
    throw new EngineError("invalid_argument", `lora.r must be a positive integer (got ${spec.r})`);
  }
  if (!(typeof spec.alpha === "number" && spec.alpha > 0)) {
    throw new EngineError("invalid_argument", `lora.alpha must be a positive number (got ${spec.alpha})`);
  }
  if (!Array.isArray(spec.targetModules) || spec.targetModules.length === 0) {
    throw new EngineError("invalid_argument", "lora.targetModules must name at least one projection");
  }
  for (const t of spec.targetModules) {
    if (!ALL_LORA_TARGETS.includes(t)) {
      throw new EngineError(
        "invalid_argument",
        `lora.targetModules: "${t}" is not one of ${ALL_LORA_TARGETS.join(", ")}`,
      );
    }
  }
}

/**
 * A fresh adapter initialised like PEFT: A ~ kaiming_uniform(a=√5), i.e.
 * U(-1/√in, 1/√in), from the seed; B = 0 so the adapter starts as the identity.
 */
export function initLoraAdapter(config: LlamaConfig, spec: LoraSpec, seed: number): LoraAdapter {
  validateLoraSpec(spec);
  const rng = new Rng(seed);
  const tensors = new Map<string, Float32Array>();
  for (let l = 0; l < config.numHiddenLayers; l++) {
    for (const target of ALL_LORA_TARGETS) {
      if (!spec.targetModules.includes(target)) continue;
      const { in: fanIn, out } = projectionShape(config, target);
      const bound = 1 / Math.sqrt(fanIn);
      const a = new Float32Array(spec.r * fanIn);
      for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
      tensors.set(loraTensorName(l, target, "A"), a);
      tensors.set(loraTensorName(l, target, "B"), new Float32Array(out * spec.r));
    }
  }
  return { spec: { ...spec, targetModules: [...spec.targetModules] }, tensors };
}

/** The per-layer view of an adapter's tensors (no copies); checks every shape. */
export function loraLayersOf(adapter: LoraAdapter, config: LlamaConfig, file = "adapter"): LoraLayers {
  const { r, alpha, targetModules } = adapter.spec;
  const layers: Partial<Record<LoraTarget, LoraPair>>[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    const pairs: Partial<Record<LoraTarget, LoraPair>> = {};
    for (const target of targetModules) {
      const { in: fanIn, out } = projectionShape(config, target);
      const a = adapter.tensors.get(loraTensorName(l, target, "A"));
      const b = adapter.tensors.get(loraTensorName(l, target, "B"));
      if (!a || !b) {
        throw new EngineError(
          "shape_mismatch",
          `${file}: missing tensor ${loraTensorName(l, target, a ? "B" : "A")}`,
          file,
        );
      }
      if (a.length !== r * fanIn || b.length !== out * r) {
        throw new EngineError(
          "shape_mismatch",
          `${file}: layer ${l} ${target} LoRA factors have ${a.length} and ${b.length} values; expected A [${r}, ${fanIn}] and B [${out}, ${r}]`,
          file,
        );
      }
      pairs[target] = { a, b };
    }
    layers.push(pairs);
  }
  return { r, scale: alpha / r, layers };
}

/** Zeroed arrays shaped like a LoraLayers view (gradients, optimizer moments). */
export function zerosLike(lora: LoraLayers): LoraLayers {
  return {
    r: lora.r,
    scale: lora.scale,
    layers: lora.layers.map((pairs) => {
      const out: Partial<Record<LoraTarget, LoraPair>> = {};
      for (const [target, pair] of Object.entries(pairs) as [LoraTarget, LoraPair][]) {
        out[target] = { a: new Float32Array(pair.a.length), b: new Float32Array(pair.b.length) };
      }
      return out;
    }),
  };
}

/** Every parameter array of a LoraLayers view, in a fixed order (layer, target, A then B). */
export function loraParams(lora: LoraLayers): Float32Array[] {
  const out: Float32Array[] = [];
  for (const pairs of lora.layers) {
    for (const target of ALL_LORA_TARGETS) {
      const pair = pairs[target];
      if (pair) out.push(pair.a, pair.b);
    }
  }
  return out;
}
