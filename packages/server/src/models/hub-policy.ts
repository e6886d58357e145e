// Which Hub models this server's jobs may use: `svc server --hub-models
// <pattern,...>` (docs/hub.md#policy). A pattern is an `org/name` glob where
// "*" stands for any characters but "/" ("Qwen/*", "HuggingFaceTB/SmolLM2-*",
// "*/*" for all), matched without regard to case as the Hub resolves names;
// "cached" allows any model already in the Hugging Face cache, "none" no Hub
// model at all. The default, "cached", downloads nothing.

export const HUB_MODELS_FLAG = "--hub-models";
export const DEFAULT_HUB_MODELS = ["cached"] as const;

const PATTERN = /^[\w.*-]+\/[\w.*-]+$/;

function globRegex(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, "\\$&"))
    .join("[^/]*");
  return new RegExp(`^${body}$`, "i");
}

export class HubModelPolicy {
  private readonly globs: RegExp[];
  readonly allowsCached: boolean;

  constructor(readonly patterns: readonly string[] = DEFAULT_HUB_MODELS) {
    this.allowsCached = patterns.includes("cached");
    this.globs = patterns.filter((p) => p !== "cached" && p !== "none").map(globRegex);
  }

  /** Parses the flag's value; an entry that is not a pattern is an error naming it. */
  static parse(text: string): HubModelPolicy {
    const patterns = text
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean)
      .map((p) => (p === "*" ? "*/*" : p));
    if (patterns.length === 0)
      throw new Error(`${HUB_MODELS_FLAG}: give patterns such as "Qwen/*", or "cached", or "none"`);
    for (const p of patterns) {
      if (p === "none" && patterns.length > 1)
        throw new Error(`${HUB_MODELS_FLAG}: "none" cannot be listed with other patterns`);
      if (p !== "cached" && p !== "none" && !PATTERN.test(p))
        throw new Error(
          `${HUB_MODELS_FLAG}: ${JSON.stringify(p)} is not an <org>/<name> pattern (letters, digits, "_", "-", "." and "*")`,
        );
    }
    return new HubModelPolicy(patterns);
  }

  /** Whether jobs may download `repo` (an `org/name` without revision). */
  allowsDownload(repo: string): boolean {
    return this.globs.some((glob) => glob.test(repo));
  }

  /** Whether a model of `repo` already cached may be used. */
  allowsUse(repo: string): boolean {
    return this.allowsCached || this.allowsDownload(repo);
  }

  /** The rule as the operator wrote it, for refusals. */
  describe(): string {
    return `svc server ${HUB_MODELS_FLAG} ${this.patterns.join(",")}`;
  }
}
