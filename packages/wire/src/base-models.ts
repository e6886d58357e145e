// Wire types of base models (/v1/models) and the Hub name rules shared by the
// server, the SDK and Studio.

/** A Hugging Face Hub repo id: `<org>/<name>`, each of letters, digits, "_", "-", "." (not leading), at most 96 characters. */
export const HUB_REPO_ID_PATTERN = /^[A-Za-z0-9][\w.-]{0,95}\/[A-Za-z0-9][\w.-]{0,95}$/;
/**
 * A branch, tag or commit sha after "@" in `<org>/<name>@<revision>`; "refs/pr/1" style names included. As in
 * git ref names: no "..", no empty part ("a//b", a leading or trailing "/"), no part starting with "." ("./x",
 * ".git"); a revision names a file under the cache's refs/, and such parts would name another one.
 */
export const HUB_REVISION_PATTERN = /^(?!.*\.\.)(?!.*\/\/)(?!(?:.*\/)?\.)(?!.*\/$)(?!\/)[\w.\-/]{1,200}$/;

/** The org of svc's bundled models: `svc/<name>` is never looked up on the Hub. */
export const BUNDLED_MODEL_ORG = "svc";

/** Whether `name` is `<org>/<name>[@<revision>]` outside the `svc` org (docs/hub.md). */
export function isHubModelName(name: string): boolean {
  const at = name.indexOf("@");
  const repo = at < 0 ? name : name.slice(0, at);
  return (
    HUB_REPO_ID_PATTERN.test(repo) &&
    !repo.startsWith(`${BUNDLED_MODEL_ORG}/`) &&
    !repo.includes("..") &&
    (at < 0 || HUB_REVISION_PATTERN.test(name.slice(at + 1)))
  );
}

/**
 * BaseModelInfo.family of a model whose architecture the engine does not
 * implement: it trains only on the torch backend with torchModel "transformers"
 * and is never served (docs/gpu-training.md#architectures-svc-does-not-implement).
 */
export const TRANSFORMERS_ONLY_FAMILY = "transformers";

/** A base model as the engine reads its config.json. */
export interface BaseModelInfo {
  /** `<org>/<model>`, e.g. "svc/pico-llama". */
  name: string;
  /**
   * The engine's model family: "llama", "mistral", "qwen2", "qwen3", "gemma3", "phi3", "smollm3", "olmo2" or "granite";
   * "transformers" for an architecture the engine does not implement, which trains only on the torch backend with
   * torchModel "transformers" and is never served (docs/gpu-training.md#architectures-svc-does-not-implement).
   */
  family: string;
  /** config.json's architecture, e.g. "Qwen3ForCausalLM". */
  architecture: string;
  parameters: number;
  /** The most positions the model runs (max_position_embeddings). */
  contextLength: number;
  /** The PEFT module names `hyperparameters.lora.targetModules` may list for this model (or "all-linear" for all of them). */
  loraTargets: string[];
  description: string;
  /** Where the model comes from: the repository's models/ folder, `svc server --model name=dir`, or the Hugging Face Hub (docs/hub.md). */
  source: "bundled" | "local" | "hub";
  /** Whether its files are on this machine (always true for bundled and local models). */
  cached: boolean;
  /** For a Hub model, the commit sha of the cached snapshot; null otherwise. */
  revision: string | null;
  /** Bytes of its files on disk (config, tokenizer, weights); null when not cached. */
  sizeBytes: number | null;
}
