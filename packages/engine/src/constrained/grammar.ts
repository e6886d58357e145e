// What a constrained generation must produce (OutputGrammar), the JSON Schema
// subset it understands, and the error that names what it does not understand.

/** A JSON Schema as a plain object (or boolean schema). */
export type JsonSchema = Record<string, unknown> | boolean;

/** What the generated text must match. Built by callers; compiled by the engine. */
export type OutputGrammar =
  | { kind: "literal"; text: string }
  /** A JSON value matching `schema`; null: any JSON object (response_format json_object). */
  | { kind: "json"; schema: JsonSchema | null }
  | { kind: "sequence"; items: OutputGrammar[] }
  | { kind: "choice"; options: OutputGrammar[] }
  | { kind: "repeat"; item: OutputGrammar; separator?: OutputGrammar; min: number; max?: number }
  /**
   * Free text until `trigger` is generated; from the trigger on, the text must
   * match `then` (whose text starts with the trigger). After `then` completes
   * only end-of-sequence may follow.
   */
  | { kind: "lazy"; trigger: string; then: OutputGrammar };

/** An unsupported or malformed schema: `keyword` is the JSON Schema keyword, `path` a JSON pointer to it. */
export class SchemaError extends Error {
  readonly keyword: string;
  readonly path: string;

  constructor(keyword: string, path: string, detail: string) {
    super(`${path || "/"}: ${detail}`);
    this.name = "SchemaError";
    this.keyword = keyword;
    this.path = path;
  }
}

/** A JSON pointer with one more reference token (RFC 6901 escaping). */
export function pointerTo(path: string, token: string | number): string {
  return `${path}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;
}
