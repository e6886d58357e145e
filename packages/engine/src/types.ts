// The engine's public contract. The server, the SDK and outside checks use
// exactly these names; implementations live in the modules named beside each.

import type { LogitAdjustmentOptions } from "./generation/logit-adjustments.js";

// ---------------------------------------------------------------- chat data

export type { ChatMessage, ChatRole, ToolCall, ToolDefinition } from "./text/chat-messages.js";

import type { ChatMessage, ToolDefinition } from "./text/chat-messages.js";

/** One training row, as read from JSONL (OpenAI chat fine-tuning format, or prompt/completion). */
export type DatasetRow =
  | { messages: ChatMessage[]; tools?: ToolDefinition[] }
  | { prompt: string; completion: string };

/** A tokenized training example: labels[i] is the target for position i (-100 = not trained on). */
export interface TokenizedExample {
  inputIds: Int32Array;
  labels: Int32Array;
}

// ---------------------------------------------------------------- tokenizer (text/tokenizer.ts)

export interface RenderChatOptions {
  /** Append the assistant turn's opening so the model continues as the assistant. */
  addGenerationPrompt?: boolean;
  /** The functions the model may call, rendered in the template's tool syntax (tool-syntax.ts). */
  tools?: readonly ToolDefinition[];
}

export interface Tokenizer {
  encode(text: string): number[];
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /**
   * The bytes each token id adds to the decoded text (index = id; null for
   * special tokens and ids the vocabulary lacks), computed once; throws
   * invalid_argument for a decoder it cannot read (constrained/token-bytes.ts).
   */
  tokenBytes(): readonly (Uint8Array | null)[];
  /** Render messages with the model's chat template (tokenizer_config.json). */
  applyChatTemplate(messages: ChatMessage[], options?: RenderChatOptions): string;
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  /** Token ids that end a generation: eos_token, every eos_token_id of generation_config.json and config.json, and the chat template's end-of-turn token. */
  readonly eosTokenIds: number[];
  readonly padTokenId: number;
  /**
   * An upper bound on the text bytes one token stands for: a text of B UTF-8
   * bytes encodes to at least B / maxTokenBytes tokens, so a prompt can be
   * refused as too long without tokenizing it.
   */
  readonly maxTokenBytes: number;
  /**
   * How the model writes tool calls (tool-syntax.ts): the template's own syntax, svc's default for a
   * template without one, or null for a template whose syntax svc cannot parse (it still trains).
   */
  readonly toolSyntax: import("./text/tool-syntax.js").ToolSyntax | null;
}

// ---------------------------------------------------------------- model (loading/load.ts, graph/model.ts)

export type { FamilyName, LoraModule, ModelConfig, Slot } from "./families/types.js";

export interface LoraSpec {
  r: number;
  alpha: number;
  /** PEFT module names of the model's family (e.g. q_proj, or Phi-3's qkv_proj), or ["all-linear"]. */
  targetModules: string[];
}

/** A LoRA adapter held in memory (PEFT layout on disk: adapter_config.json + adapter_model.safetensors). */
export interface LoraAdapter {
  readonly spec: LoraSpec;
  /** PEFT tensor name → weights, e.g. base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight. */
  readonly tensors: Map<string, Float32Array>;
}

export interface LoadModelOptions {
  /** A PEFT LoRA adapter folder applied to the model. */
  adapter?: string;
}

export interface Model {
  readonly dir: string;
  /** Base weights (frozen during LoRA training; shared by every adapter view). */
  readonly weights: import("./graph/weights.js").ModelWeights;
  readonly config: import("./families/types.js").ModelConfig;
  readonly tokenizer: Tokenizer;
  /** The adapter applied to this model view, if any. */
  readonly adapter: LoraAdapter | null;
  /** Logits for positions 0..T-1, row-major [T, vocab]; a fresh forward pass with no cached state. */
  logits(tokenIds: ArrayLike<number>): Float32Array;
  /** A view of the same base weights with another adapter (or none); no weights are copied. */
  withAdapter(adapter: LoraAdapter | null): Model;
}

// ---------------------------------------------------------------- training (training/train.ts)

export type LrSchedulerType = "linear" | "cosine" | "constant";
/** What happens to a row over maxLength; truncation.ts says how each mode cuts. */
export type TruncationMode = "keep_answers" | "end" | "strict";

export interface TrainHyperparameters {
  lora: LoraSpec;
  /** Stop after this many optimizer steps (overrides numTrainEpochs when set). */
  maxSteps?: number;
  numTrainEpochs?: number; // default 1
  learningRate?: number; // default 2e-4
  batchSize?: number; // default 4 (examples per micro-batch)
  gradientAccumulationSteps?: number; // default 1
  lrSchedulerType?: LrSchedulerType; // default "linear"
  warmupSteps?: number; // default 0
  weightDecay?: number; // default 0
  maxGradNorm?: number; // default 1.0 (0 disables clipping)
  adamBeta1?: number; // default 0.9
  adamBeta2?: number; // default 0.999
  adamEpsilon?: number; // default 1e-8
  evalSteps?: number; // eval every N steps when an eval set exists (default: only at the end)
  exactMatchMaxTokens?: number; // exact match runs when eval answers fit in this many tokens (default 32; 0 = off; task-metrics.ts)
  exactMatchSamples?: number; // eval rows exact match generates for (default 32; 0 = off)
  saveSteps?: number; // checkpoint every N steps (default: none besides the final adapter)
  maxLength?: number; // truncate examples to this many tokens (default 512)
  truncation?: TruncationMode; // how a row over maxLength is cut (default "keep_answers"; truncation.ts)
  lossOn?: "assistant" | "all"; // default "assistant"
  seed?: number; // default 42
}

export interface TrainProgress {
  step: number;
  totalSteps: number;
  /** Mean training loss over the step's tokens (null on eval-only reports). */
  loss: number | null;
  evalLoss: number | null;
  /** Fraction of the eval set's trained tokens predicted exactly (argmax); null when no eval ran at this step. */
  evalTokenAccuracy: number | null;
  /** Fraction of the exact-match sample whose greedy answer equals the reference (trimmed); null when not computed. */
  evalExactMatch: number | null;
  learningRate: number;
  epoch: number;
  tokensPerSecond: number;
  /** Tokens the step's forward and backward ran over (prompts and answers, not padding): OpenAI's trained tokens. */
  trainedTokens?: number;
  /**
   * SFT: the share of the step's target tokens whose argmax logit is the target (train mean token
   * accuracy), counted in the loss pass itself; absent for methods whose targets are not answers to match.
   */
  tokenAccuracy?: number;
}

export interface CheckpointInfo {
  step: number;
  /** Folder in PEFT layout, plus trainer_state.json and optimizer.safetensors for resuming. */
  dir: string;
}

export interface TrainOptions {
  model: Model;
  trainSet: DatasetRow[];
  evalSet?: DatasetRow[];
  hyperparameters: TrainHyperparameters;
  /** Checkpoints go to <outputDir>/checkpoint-<step>/, the final adapter to <outputDir>/final/. */
  outputDir: string;
  signal?: AbortSignal;
  /** Resume from a checkpoint folder written by an earlier run with the same data and hyperparameters. */
  resumeFrom?: string;
  /**
   * Start from this PEFT adapter folder's weights (same rank, alpha and targets
   * as hyperparameters.lora) with a fresh optimizer at step 0; resumeFrom wins when both are set.
   */
  startAdapter?: string;
  /** prepareSets' result for these sets and hyperparameters (a caller that reports it first); train() prepares them otherwise. */
  prepared?: PreparedSets;
  onProgress?: (progress: TrainProgress) => void | Promise<void>;
  onCheckpoint?: (checkpoint: CheckpointInfo) => void | Promise<void>;
  /** Written as the adapters' base_model_name_or_path, e.g. a Hub id (default: the model's folder). */
  baseModelName?: string;
  /** Written as the adapters' revision: the base model's commit on the Hub. */
  baseModelRevision?: string;
  /**
   * "fp32" (default), "bf16" or "auto" (train-precision.ts TRAINING_PRECISIONS):
   * bf16 holds the frozen base weights in bf16 and multiplies with them in
   * bf16 with fp32 sums; auto is bf16 where the kernels have bf16 dot products.
   */
  precision?: import("./training/train-precision.js").TrainingPrecision;
  /** "int8": the frozen base weights held in int8 (per-channel scales), dequantized inside the products. */
  baseWeights?: import("./training/train-precision.js").BaseWeightFormat;
}

/** One set fitted to maxLength: the examples that train, and the 1-based numbers of the rows cut or dropped. */
export interface PreparedSet {
  examples: TokenizedExample[];
  rows: number;
  truncated: number[];
  dropped: { row: number; reason: string }[];
}

export interface PreparedSets {
  train: PreparedSet;
  eval: PreparedSet | null;
}

export interface TrainResult {
  /** "completed", or "cancelled" when the signal aborted (a checkpoint of the last step is written). */
  status: "completed" | "cancelled";
  /** The precision the run used and the format its base weights were held in (auto resolved). */
  precision: import("./training/train-precision.js").ResolvedPrecision;
  steps: number;
  finalLoss: number | null;
  evalLoss: number | null;
  /** The final adapter folder (PEFT layout); on cancel, the last checkpoint's folder. */
  adapterDir: string;
  checkpoints: CheckpointInfo[];
}

// ---------------------------------------------------------------- generation (generation/generate.ts)

export interface GenerateOptions extends LogitAdjustmentOptions {
  temperature?: number; // default 1; 0 = greedy
  topP?: number; // default 1
  maxTokens?: number; // default 256
  /**
   * When the prompt plus maxTokens exceeds the context: "clamp" (default)
   * generates as many tokens as fit; "refuse" throws context_length_exceeded,
   * as OpenAI's API does for an explicit max_tokens.
   */
  maxTokensPolicy?: "clamp" | "refuse";
  stop?: string[];
  seed?: number;
  signal?: AbortSignal;
  /**
   * The completion must match this grammar: only tokens that keep the text a
   * valid prefix are sampled, the end of sequence only where the text is
   * complete; generation stops with finishReason "stop" when nothing can follow
   * (constrained/, docs/generation.md).
   */
  grammar?: import("./constrained/grammar.js").OutputGrammar;
  /**
   * Report each generated token's logprob with this many most likely
   * alternatives (0 to 20; token-logprobs.ts); absent: none.
   */
  logprobs?: number;
}

/** A generated token's logprobs (generation/token-logprobs.ts reads them; OpenAI's logprobs). */
export interface TopLogprob {
  /** The token's text; `bytes:\xHH…` where its bytes are not whole UTF-8 (OpenAI's notation). */
  token: string;
  /** The UTF-8 bytes the token adds to the text. */
  bytes: number[];
  logprob: number;
}

export interface TokenLogprob extends TopLogprob {
  /** The most likely tokens at this position, most likely first (ties: lower id first). */
  topLogprobs: TopLogprob[];
}

export interface GenerationChunk {
  /** Newly decoded text (may be "" while a multi-byte character or a possible stop string is pending). */
  text: string;
  tokenId: number;
  /** With `logprobs`: the token's logprob and alternatives (absent on the end-of-sequence token). */
  logprob?: TokenLogprob;
}

export type FinishReason = "stop" | "length" | "cancelled";

export interface GenerationResult {
  text: string;
  promptTokens: number;
  completionTokens: number;
  finishReason: FinishReason;
}

export interface GenerationRequest extends GenerateOptions {
  /** Either chat messages (rendered with the chat template and a generation prompt) or raw prompt token ids. */
  messages?: ChatMessage[];
  promptIds?: number[];
  /** Adapter for this request; null/undefined = the base model. */
  adapter?: LoraAdapter | null;
}

/**
 * Streams generations for many concurrent requests over one set of base weights
 * (continuous batching; each request has its own adapter and KV cache).
 */
export interface Generator {
  /** Most positions (prompt plus completion) of one sequence. */
  readonly maxContext: number;
  /** Yields chunks as tokens are produced; the iterator's return value is the result. */
  generate(request: GenerationRequest): AsyncGenerator<GenerationChunk, GenerationResult>;
  /** Runs a request to the end and returns its result. */
  complete(request: GenerationRequest): Promise<GenerationResult>;
}
