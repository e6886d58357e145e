// Folding a LoRA adapter into the base weights, as PEFT's merge_and_unload
// does: W' = W + (alpha / r) · B·A for every adapted projection (a fused
// module's B splits by rows into its slots, which share A). In place: an
// export reads the base weights for itself, and a copy would double the
// memory a large model needs.
import type { ModelConfig, Slot } from "../families/index.js";
import type { LoraLayers, ModelWeights } from "../graph/weights.js";
import { projectionShape } from "../graph/weights.js";

/** Folds the adapter into `weights` (which the caller owns) and returns them. */
export function mergeLora(config: ModelConfig, weights: ModelWeights, lora: LoraLayers | null): ModelWeights {
  const merged = weights;
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
