// Messages between the server and its inference process. Requests carry
// folders, not loaded objects: the process loads and caches models and adapters.
import type {
  ChatMessage,
  GenerationChunk,
  GenerationResult,
  OutputGrammar,
  ToolDefinition,
  ToolSyntax,
  WeightFormat,
} from "@svc/engine";

/** A generation request as it crosses the process boundary (no adapter object, no signal). */
export interface ChatGeneration {
  messages: ChatMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  /** "refuse": an explicit max_tokens past the context is an error (OpenAI's behaviour); default "clamp". */
  maxTokensPolicy?: "clamp" | "refuse";
  /** Functions the prompt offers, rendered by the model's chat template. */
  tools?: ToolDefinition[];
  /** The completion must match this grammar (tool calls, response_format). */
  grammar?: OutputGrammar;
  /** OpenAI's penalties in [-2, 2] and logit_bias (token id → [-100, 100]), applied before the draw. */
  frequencyPenalty?: number;
  presencePenalty?: number;
  logitBias?: Record<string, number>;
  /** Each token's logprob with this many alternatives (0 to 20); absent: none. */
  logprobs?: number;
}

/** What a request must fit, per base model (checked before anything is tokenized), and how it writes tool calls. */
export interface PromptLimits {
  /** Positions of one sequence (prompt plus completion). */
  contextLength: number;
  /** Text bytes one token can stand for at most (Tokenizer.maxTokenBytes). */
  maxTokenBytes: number;
  /** Tokenizer.toolSyntax: null when svc cannot read the model's tool calls. */
  toolSyntax: ToolSyntax | null;
  /** Token ids are below this (logit_bias keys are checked against it). */
  vocabSize: number;
}

export interface GenerationTarget {
  modelDir: string;
  adapterDir: string | null;
  /** The format the process holds the base weights in (one generator per model folder and format). */
  weightFormat: WeightFormat;
}

export type InferenceCommand =
  | ({ type: "prepare"; id: number } & GenerationTarget)
  | ({ type: "generate"; id: number; request: ChatGeneration } & GenerationTarget)
  | { type: "abort"; id: number };

export type InferenceReply =
  | { type: "prepared"; id: number; limits: PromptLimits }
  | { type: "chunk"; id: number; chunk: GenerationChunk }
  | { type: "result"; id: number; result: GenerationResult }
  | { type: "error"; id: number; message: string; code: string | null };
