// The one error type the engine throws for bad input. `code` is stable and
// machine-readable (the server maps it to its error shape); `message` names the
// file (and line, for datasets) and says what is wrong.

export type EngineErrorCode =
  | "missing_file"
  | "invalid_file"
  | "unsupported_architecture"
  | "unsupported_dtype"
  | "shape_mismatch"
  | "invalid_dataset"
  | "invalid_argument"
  | "context_length_exceeded"
  /** A GRPO reward that is not a finite number, or a scorer that failed (grpo-rewards.ts). */
  | "invalid_reward";

export class EngineError extends Error {
  readonly code: EngineErrorCode;

  constructor(
    code: EngineErrorCode,
    message: string,
    readonly file?: string,
    readonly line?: number,
  ) {
    super(message);
    this.name = "EngineError";
    this.code = code;
  }
}

export function isEngineError(error: unknown, code?: EngineErrorCode): error is EngineError {
  return error instanceof EngineError && (code === undefined || error.code === code);
}

/**
 * Allowed values in words, for a refusal: '"linear", "cosine" or "constant"'.
 * Every engine message that lists allowed values builds it from the list the
 * check reads, so a value added to the list is named too. The wire's
 * allowedValues (@svc/wire rules.ts) words a list the same way; the engine
 * cannot import the wire, so packages/server/src/wire-engine.test.ts pins the two.
 */
export function allowedValues(values: readonly string[]): string {
  const quoted = values.map((v) => JSON.stringify(v));
  return quoted.length < 2
    ? (quoted[0] ?? "nothing")
    : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}
