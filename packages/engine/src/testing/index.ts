// @svc/engine/testing: test support, kept out of the product's API. Random
// model folders and weights, the byte-level test tokenizer, family configs,
// and needs() for skips that name the missing piece. Only tests, benchmarks
// and scripts import it; product code under packages/*/src cannot (checked by
// packages/engine/test/testing-boundary.test.ts). The kernels' conformance
// cases and fuzz (testing/kernels/) are the engine's own and not exported.
export { FAMILY_CONFIGS } from "./family-configs.js";
export { MISSING_PIECES, type MissingPiece, missingPieceOf, needs } from "./missing-piece.js";
export { writeModelFolder } from "./model-folder.js";
export { createRandomModel, type RandomModelOptions } from "./random-model.js";
export {
  randomLoraAdapter,
  randomModelWeights,
  smallTestConfig,
  type TestConfigOptions,
} from "./random-weights.js";
export { type TestTokenizerOptions, writeTestTokenizer } from "./test-tokenizer.js";
