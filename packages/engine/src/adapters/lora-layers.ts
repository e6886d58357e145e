// Per-request adapters for generation: the LoraLayers view of a LoraAdapter is
// built (and its shapes checked) once per adapter object and model shape, then
// reused by every request that names the same adapter. The view shares the
// adapter's arrays, so no weights are copied.

import type { LoraLayers } from "../graph/weights.js";
import type { LoraAdapter, ModelConfig } from "../types.js";
import { loraLayersOf } from "./lora.js";

const layersByAdapter = new WeakMap<LoraAdapter, { config: ModelConfig; layers: LoraLayers }>();

/** The adapter's LoraLayers for a model of this config (cached by adapter object). */
export function loraLayersFor(adapter: LoraAdapter, config: ModelConfig): LoraLayers {
  const cached = layersByAdapter.get(adapter);
  if (cached && cached.config === config) return cached.layers;
  const layers = loraLayersOf(adapter, config, "adapter");
  layersByAdapter.set(adapter, { config, layers });
  return layers;
}
