// Every failure of a Hub lookup or download, with a code the API and CLI can
// act on and a message that names the setting that fixes it.
import { HubApiError } from "@huggingface/hub";

export type HubErrorCode =
  | "hub_offline"
  | "hub_gated"
  | "hub_not_found"
  | "hub_unreachable"
  | "hub_refused"
  | "hub_corrupt"
  | "hub_cancelled"
  | "hub_cache";

export class HubError extends Error {
  constructor(
    message: string,
    readonly code: HubErrorCode,
  ) {
    super(message);
    this.name = "HubError";
  }
}

export type RepoKind = "model" | "dataset";

/** "Qwen/Qwen3-0.6B" or "dataset HuggingFaceH4/ultrachat" (how messages name a repo). */
export function repoLabel(kind: RepoKind, repo: string, revision?: string): string {
  const at = revision && revision !== "main" ? `@${revision}` : "";
  return `${kind === "dataset" ? "dataset " : ""}${repo}${at}`;
}

/**
 * A failed Hub request as a HubError. The Hub answers 401 both for gated or
 * private repos without a token and for repos that do not exist (so that
 * private names do not leak), hence the one message for both.
 */
export function hubErrorOf(
  error: unknown,
  context: { kind: RepoKind; repo: string; revision: string; endpoint: string; hasToken: boolean },
): HubError {
  if (error instanceof HubError) return error;
  const label = repoLabel(context.kind, context.repo, context.revision);
  const status = error instanceof HubApiError ? error.statusCode : (error as { status?: number }).status;
  if (status === 401 || status === 403) {
    const why = context.hasToken
      ? "the token in HF_TOKEN (or the token file) has no access to it: accept the repo's terms on the Hub with that account, or set HF_TOKEN to a token that has access"
      : "it is gated or private (or does not exist): set HF_TOKEN (or log in with `hf auth login`, which writes $HF_HOME/token) to a token with access";
    return new HubError(
      `${label}: the Hub at ${context.endpoint} refused access (${status}); ${why}`,
      "hub_gated",
    );
  }
  if (status === 404)
    return new HubError(
      `${label}: not found on the Hub at ${context.endpoint} (check the name and the revision)`,
      "hub_not_found",
    );
  if (error instanceof TypeError && /must start with 'hf_'/.test(error.message))
    return new HubError(`HF_TOKEN: a Hugging Face token starts with "hf_"`, "hub_gated");
  if (error instanceof Error && error.name === "AbortError")
    return new HubError(`${label}: the download was cancelled`, "hub_cancelled");
  if (isCacheError(error)) {
    const { code, syscall, path } = error;
    return new HubError(
      `${label}: the Hub cache could not be written (${code}${syscall ? ` on ${syscall}` : ""}${path ? ` ${path}` : ""}); HF_HUB_CACHE or HF_HOME sets where it lives`,
      "hub_cache",
    );
  }
  const reason = error instanceof Error ? causeText(error) : String(error);
  const code = status ? ` (${status})` : "";
  return new HubError(
    `${label}: the Hub at ${context.endpoint} could not be reached${code}: ${reason} (HF_ENDPOINT sets the Hub's address; HF_HUB_OFFLINE=1 uses only the cache)`,
    "hub_unreachable",
  );
}

/** Errors of the disk, not the network: file-system calls name their path; a full or read-only disk may not. */
const DISK_CODES = new Set(["ENOSPC", "EROFS", "EDQUOT"]);

function isCacheError(error: unknown): error is { code: string; syscall?: string; path?: string } {
  const system = error as { code?: unknown; path?: unknown } | null;
  return typeof system?.code === "string" && (typeof system.path === "string" || DISK_CODES.has(system.code));
}

/**
 * The status a request gets for a HubError: the Hub being unreachable is not
 * the request's fault (502), nor is a cache this server cannot write (500).
 */
export function hubErrorStatus(code: string): 400 | 500 | 502 {
  if (code === "hub_unreachable") return 502;
  if (code === "hub_cache") return 500;
  return 400;
}

/** fetch's "fetch failed" hides the reason (ECONNREFUSED, ENOTFOUND) in `cause`. */
function causeText(error: Error): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause ? `${error.message} (${cause.code ?? cause.message})` : error.message;
}
