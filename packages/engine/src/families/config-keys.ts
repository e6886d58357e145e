// Reading config.json so that nothing is silently ignored: a family reads the
// keys it understands, names those that do not change the computation, and
// every other key is refused with its name.
import { EngineError } from "../errors.js";

/** Keys of any config that do not change the forward pass: metadata, training-time dropout, generation defaults. */
const HARMLESS = new Set([
  "architectures",
  "model_type",
  "transformers_version",
  "torch_dtype",
  "dtype",
  "_name_or_path",
  "name_or_path",
  "auto_map",
  "bos_token_id",
  "eos_token_id",
  "pad_token_id",
  "sep_token_id",
  "unk_token_id",
  "initializer_range",
  "use_cache",
  "attention_dropout",
  "hidden_dropout",
  "embedding_dropout",
  "resid_pdrop",
  "embd_pdrop",
  "output_attentions",
  "output_hidden_states",
  "return_dict",
  "use_return_dict",
  "torchscript",
  "tokenizer_class",
  "id2label",
  "label2id",
  "problem_type",
  "task_specific_params",
  "finetuning_task",
  "prefix",
  "is_decoder",
  "is_encoder_decoder",
  "add_cross_attention",
  "chunk_size_feed_forward",
  "pruned_heads",
  "tie_encoder_decoder",
  "cross_attention_hidden_size",
  "decoder_start_token_id",
  "_attn_implementation",
  "_attn_implementation_autoset",
  "_sliding_window_pattern",
  "cache_implementation",
  "max_length",
  "min_length",
  "do_sample",
  "early_stopping",
  "num_beams",
  "num_beam_groups",
  "diversity_penalty",
  "temperature",
  "top_k",
  "top_p",
  "typical_p",
  "repetition_penalty",
  "length_penalty",
  "no_repeat_ngram_size",
  "encoder_no_repeat_ngram_size",
  "bad_words_ids",
  "num_return_sequences",
  "output_scores",
  "return_dict_in_generate",
  "forced_bos_token_id",
  "forced_eos_token_id",
  "remove_invalid_values",
  "exponential_decay_length_penalty",
  "suppress_tokens",
  "begin_suppress_tokens",
  "tf_legacy_loss",
  "transformers.js_config",
  "is_llama_config",
  "use_bfloat16",
]);

export class ConfigKeys {
  private readonly used = new Set<string>();

  constructor(
    readonly json: Record<string, unknown>,
    readonly file: string,
  ) {}

  refuse(why: string, code: "unsupported_architecture" | "invalid_file" = "unsupported_architecture") {
    return new EngineError(code, `${this.file}: ${why}`, this.file);
  }

  /** Whether the key is present with a non-null value. */
  has(key: string): boolean {
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  /** The raw value (marks the key as understood). */
  get(key: string): unknown {
    this.used.add(key);
    return this.json[key];
  }

  /** Marks keys as read: the family accounts for them (their defaults, or no effect on its computation). */
  accept(...keys: string[]): void {
    for (const key of keys) this.used.add(key);
  }

  int(key: string, fallback?: number): number {
    const value = this.get(key) ?? fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
      throw this.refuse(`"${key}" must be a positive integer (got ${JSON.stringify(value)})`, "invalid_file");
    }
    return value;
  }

  /** A positive integer, or null when the key is absent or null. */
  optionalInt(key: string): number | null {
    if (this.has(key)) return this.int(key);
    this.accept(key);
    return null;
  }

  num(key: string, fallback?: number): number {
    const value = this.get(key) ?? fallback;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw this.refuse(`"${key}" must be a positive number (got ${JSON.stringify(value)})`, "invalid_file");
    }
    return value;
  }

  bool(key: string, fallback: boolean): boolean {
    const value = this.get(key) ?? fallback;
    if (typeof value !== "boolean") {
      throw this.refuse(`"${key}" must be true or false (got ${JSON.stringify(value)})`, "invalid_file");
    }
    return value;
  }

  /** A key the family supports only at one value (or absent). */
  only(key: string, allowed: unknown, why = ""): void {
    const value = this.get(key);
    if (value === undefined || value === null || value === allowed) return;
    throw this.refuse(
      `"${key}": ${JSON.stringify(value)} is not supported${why ? ` (${why})` : ` (only ${JSON.stringify(allowed)})`}`,
    );
  }

  /** Refuses the first key nobody read that is not known to be harmless. */
  refuseUnknown(family: string): void {
    for (const key of Object.keys(this.json)) {
      if (this.used.has(key) || HARMLESS.has(key)) continue;
      if (key === "quantization_config") throw this.refuse("quantized checkpoints are not supported");
      throw this.refuse(
        `key "${key}" is not understood for the ${family} family; it may change the computation, so the model is refused`,
      );
    }
  }
}
