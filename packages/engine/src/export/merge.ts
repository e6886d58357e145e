// Folding a LoRA adapter into the base weights, as PEFT's merge_and_unload
// does: W' = W + (alpha / r) · B·A for every adapted projection (a fused
// module's B splits by rows into its slots, which share A). The result is a
// fresh copy; the loaded model's weights stay as they are.
import type { ModelConfig, Slot } from "../families/index.js";
import type { LoraLayers, ModelWeights } from "../weights.js";
import { projectionShape } from "../weights.js";

function copyWeights(w: ModelWeights): ModelWeights {
  const copy = (a: Float32Array | null) => (a ? Float32Array.from(a) : null);
  const embed = Float32Array.from(w.embed);
  return {
    embed,
    lmHead: w.lmHead === w.embed ? embed : Float32Array.from(w.lmHead),
    finalNorm: Float32Array.from(w.finalNorm),
    layers: w.layers.map((l) => ({
      attnNorm: copy(l.attnNorm),
      attnOutNorm: copy(l.attnOutNorm),
      mlpNorm: copy(l.mlpNorm),
      mlpOutNorm: copy(l.mlpOutNorm),
      qNorm: copy(l.qNorm),
      kNorm: copy(l.kNorm),
      q: Float32Array.from(l.q),
      k: Float32Array.from(l.k),
      v: Float32Array.from(l.v),
      o: Float32Array.from(l.o),
      gate: Float32Array.from(l.gate),
      up: Float32Array.from(l.up),
      down: Float32Array.from(l.down),
      bias: Object.fromEntries(Object.entries(l.bias).map(([k, v]) => [k, Float32Array.from(v)])),
    })),
  };
}

/** The base weights with the adapter folded in (or a plain copy when lora is null). */
export function mergeLora(config: ModelConfig, weights: ModelWeights, lora: LoraLayers | null): ModelWeights {
  const merged = copyWeights(weights);
  if (!lora) return merged;
  const { r, scale } = lora;
  lora.layers.forEach((pairs, l) => {
    for (const [slot, pair] of Object.entries(pairs) as [Slot, { a: Float32Array; b: Float32Array }][]) {
      const { in: cols, out: rows } = projectionShape(config, slot);
      const w = merged.layers[l][slot];
      // accumulate in float64 per element, as one rounding to float32 at the end
      const row = new Float64Array(cols);
      for (let i = 0; i < rows; i++) {
        row.fill(0);
        for (let k = 0; k < r; k++) {
          const bik = pair.b[i * r + k] * scale;
          if (bik === 0) continue;
          const a = pair.a.subarray(k * cols, (k + 1) * cols);
          for (let j = 0; j < cols; j++) row[j] += bik * a[j];
        }
        for (let j = 0; j < cols; j++) w[i * cols + j] += row[j];
      }
    }
  });
  return merged;
}
