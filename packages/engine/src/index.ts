// @svc/engine's public API: load a Hugging Face model folder of a supported family, train LoRA
// adapters, generate, and read/write adapters in PEFT's layout.
export const ENGINE_VERSION = "0.1.0";

export { initLoraAdapter, resolveTargetModules } from "./adapters/lora.js";
export { loadAdapter, type SaveAdapterOptions, saveAdapter } from "./adapters/peft.js";
export {
  checkJsonSchema,
  type JsonSchema,
  MAX_ENUM_VALUES,
  MAX_SUBSCHEMAS,
  newSchemaBudget,
  type OutputGrammar,
  type SchemaBudget,
  SchemaError,
  schemaMismatch,
} from "./constrained/index.js";
export { parseDataset, readDataset } from "./data/dataset.js";
export {
  type DatasetProfile,
  type LengthBin,
  lengthHistogram,
  type MaxLengthSuggestion,
  profileDataset,
  rowsOverMaxLength,
  suggestMaxLength,
  type TokenLengthSummary,
} from "./data/dataset-profile.js";
export {
  defaultProfileThreads,
  type ProfileFileOptions,
  profileDatasetFile,
} from "./data/dataset-profile-file.js";
export { LOSS_ON, tokenizeExample } from "./data/examples.js";
export { isPromptRow, parsePromptDataset, readPromptDataset } from "./data/grpo-dataset.js";
export {
  answerRow,
  isPreferenceRow,
  type PreferenceRow,
  parsePreferenceDataset,
  readPreferenceDataset,
} from "./data/preference-dataset.js";
export { type FittedRow, fitRow, TRUNCATION_MODES } from "./data/truncation.js";
export { allowedValues, EngineError, type EngineErrorCode, isEngineError } from "./errors.js";
export {
  checkExportOptions,
  EXPORT_FORMATS,
  type ExportFormat,
  type ExportOptions,
  type ExportResult,
  exportModel,
  GGUF_QUANTS,
  MERGED_DTYPES,
} from "./export/index.js";
export {
  FAMILIES,
  LORA_MODULE_NAMES,
  loraModulesOf,
  parameterCount,
  parseModelConfig,
} from "./families/index.js";
export { createGenerator, type GeneratorOptions } from "./generation/generate.js";
export { type LogitAdjustmentOptions, MAX_LOGIT_BIAS_ENTRIES } from "./generation/logit-adjustments.js";
export { MAX_TOP_LOGPROBS, type TokenLogprob, type TopLogprob } from "./generation/token-logprobs.js";
export { machineMemoryBytes } from "./graph/machine-memory.js";
export { packedWeightBytes } from "./graph/packed-weights.js";
export type { LayerWeights, LoraLayers, LoraPair, ModelWeights, ServingWeights } from "./graph/weights.js";
export { getKernels } from "./kernels/index.js";
export type { Kernels } from "./kernels/types.js";
export { readModelConfig } from "./loading/config.js";
export { LoadedModel, loadModel, loadServingModel } from "./loading/load.js";
export {
  heldWeightBytes,
  type ServingModel,
  servingWeights,
  servingWeightsAsync,
} from "./loading/serving-weights.js";
export { isWeightFormat, WEIGHT_FORMATS, type WeightFormat } from "./quant/formats.js";
export {
  bf16ToF32,
  decodeBf16,
  decodeF16,
  encodeBf16,
  encodeF16,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
} from "./quant/half.js";
export { loadTokenizer } from "./text/tokenizer.js";
export {
  checkToolSchemaInSlices,
  MAX_SCHEMA_DEPTH,
  newToolCallId,
  type ParsedOutput,
  parseToolCalls,
  type ToolCallEvent,
  ToolCallStream,
  type ToolChoice,
  type ToolGrammarOptions,
  toolCallGrammar,
} from "./text/tool-calls.js";
export { DEFAULT_TOOL_SYNTAX, type ToolSyntax } from "./text/tool-syntax.js";
export { evalFigures, type GrpoEvalMetrics } from "./training/grpo-eval.js";
export { type StepRewardFigures, stepRewardFigures } from "./training/grpo-figures.js";
export {
  DEFAULT_GRPO,
  GRPO_NORMALIZATIONS,
  type GrpoNormalization,
  type GrpoSettings,
  groupAdvantages,
  grpoLoss,
} from "./training/grpo-objective.js";
export { type GrpoSample, type GrpoScoreItem, type GrpoScorer, scoreBatch } from "./training/grpo-rewards.js";
export {
  type GrpoPrompt,
  type GrpoRow,
  preparePrompts,
  type SampledCompletion,
} from "./training/grpo-step.js";
export {
  type GrpoHyperparameters,
  type GrpoMetrics,
  type GrpoProgress,
  type GrpoTrainHyperparameters,
  type GrpoTrainOptions,
  resolveGrpo,
  trainGrpo,
} from "./training/grpo-train.js";
export {
  DEFAULT_BETA,
  DEFAULT_SIMPO_GAMMA,
  PREFERENCE_LOSSES,
  type PreferenceHyperparameters,
  type PreferenceLossType,
  type PreferenceMetrics,
  type PreferenceSettings,
  resolvePreference,
} from "./training/preference-loss.js";
export {
  type PreferenceProgress,
  type PreferenceTrainHyperparameters,
  type PreferenceTrainOptions,
  type PreparedPairSets,
  preparePairSets,
  trainPreference,
} from "./training/preference-train.js";
export { LR_SCHEDULER_TYPES } from "./training/schedule.js";
export { answersMatch, type ExactMatchRow, exactMatchSample } from "./training/task-metrics.js";
export { DEFAULT_SEED, plannedSteps, prepareSets, resolveHyperparameters, train } from "./training/train.js";
export {
  BASE_WEIGHT_FORMATS,
  type BaseWeightFormat,
  DEFAULT_JOB_PRECISION,
  type ResolvedPrecision,
  resolvePrecision,
  TRAINING_PRECISIONS,
  type TrainingPrecision,
} from "./training/train-precision.js";
export * from "./types.js";
