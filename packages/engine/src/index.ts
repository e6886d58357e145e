// @svc/engine's public API: load a Hugging Face Llama folder, train LoRA
// adapters, generate, and read/write adapters in PEFT's layout.
export const ENGINE_VERSION = "0.1.0";

export { parseDataset, readDataset } from "./dataset.js";
export { EngineError, type EngineErrorCode, isEngineError } from "./errors.js";
export { tokenizeExample } from "./examples.js";
export { createGenerator, type GeneratorOptions } from "./generate.js";
export { getKernels } from "./kernels/index.js";
export type { Kernels } from "./kernels/types.js";
export { LlamaModel, loadModel } from "./load.js";
export { initLoraAdapter } from "./lora.js";
export { loadAdapter, type SaveAdapterOptions, saveAdapter } from "./peft.js";
export { createRandomModel, type RandomModelOptions } from "./testing/random-model.js";
export { writeTestTokenizer } from "./testing/test-tokenizer.js";
export { loadTokenizer } from "./tokenizer.js";
export { plannedSteps, prepareSets, train } from "./train.js";
export { type FittedRow, fitRow, TRUNCATION_MODES } from "./truncation.js";
export * from "./types.js";
export type { LayerWeights, LlamaWeights, LoraLayers, LoraPair } from "./weights.js";
