// The limits on a JSON Schema's size, checked while it compiles: at most
// MAX_SUBSCHEMAS schemas compiled (every property, item, anyOf option and
// definition counts), MAX_ENUM_VALUES enum/const values in all, and
// MAX_COMPILE_DEPTH schemas nested in one another counting each $ref
// followed. The grammar the matcher walks on every token grows with these, and
// a request's schema is compiled on the server's event loop and again in the
// inference process, where a larger one would hold up every other request.

/**
 * Schemas (properties, items, anyOf options, definitions) a budget admits in all: a grammar of 2000 costs the
 * inference process under 0.1 s to compile and start matching on one core, 6000 half a second, which every
 * other request it serves would wait for.
 */
export const MAX_SUBSCHEMAS = 2_000;
/** enum and const values a budget admits in all (OpenAI's limit; each is an alternative the matcher tries). */
export const MAX_ENUM_VALUES = 1_000;
/** Schemas nested in one another, counting every $ref followed (a $ref chain recurses once per link). */
export const MAX_COMPILE_DEPTH = 256;

/** What the schemas of one request field (a response format, or all of a request's tools) have used of the limits. */
export interface SchemaBudget {
  subschemas: number;
  enumValues: number;
}

export const newSchemaBudget = (): SchemaBudget => ({ subschemas: 0, enumValues: 0 });
