// Whether a JSON value is one the schema's grammar (schema.ts) would let a
// model write: the same subset, read the same way, for a value that already
// exists (a json_schema grader's sample). Call it on a schema checkJsonSchema
// accepted. As in constrained decoding, an object with "properties" holds only
// those properties (additionalProperties is false or absent there), an object
// without them any members (of additionalProperties' schema when it is one),
// and a schema with no type and no object or array keyword any value.

import type { JsonSchema } from "./grammar.js";
import { isObject, jsonEqual, resolvePointer } from "./json-values.js";
import { ARRAY_KEYWORDS, hasType, OBJECT_KEYWORDS, TYPES, type TypeName } from "./schema.js";

type Schema = Record<string, unknown>;

/** Deepest nesting of schemas followed (as schema-budget's MAX_COMPILE_DEPTH). */
const MAX_DEPTH = 256;

function typesOf(schema: Schema): TypeName[] {
  const type = schema.type;
  if (type === undefined) {
    if (OBJECT_KEYWORDS.some((k) => k in schema)) return ["object"];
    if (ARRAY_KEYWORDS.some((k) => k in schema)) return ["array"];
    return [...TYPES];
  }
  return (Array.isArray(type) ? type : [type]) as TypeName[];
}

const at = (path: string, token: string | number) =>
  `${path}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;

/** The first place (a JSON pointer into the value) and reason the value fails the schema, or null when it conforms. */
export function schemaMismatch(root: JsonSchema, value: unknown): string | null {
  const check = (schema: unknown, v: unknown, path: string, depth: number): string | null => {
    if (depth > MAX_DEPTH) return `${path || "/"}: the schema nests too deep to check`;
    if (schema === true) return null;
    if (schema === false || !isObject(schema)) return `${path || "/"}: no value is allowed here`;
    if (typeof schema.$ref === "string") {
      const target = resolvePointer(root, decodeURIComponent(schema.$ref.slice(1)));
      return check(target, v, path, depth + 1);
    }
    if (Array.isArray(schema.anyOf)) {
      for (const option of schema.anyOf) if (check(option, v, path, depth + 1) === null) return null;
      return `${path || "/"}: matches none of "anyOf"`;
    }
    const types = typesOf(schema);
    if (!types.some((t) => hasType(v, t))) return `${path || "/"}: must be of type ${types.join(" or ")}`;
    if (schema.const !== undefined && !jsonEqual(schema.const, v))
      return `${path || "/"}: must equal ${JSON.stringify(schema.const)}`;
    if (Array.isArray(schema.enum) && !schema.enum.some((e) => jsonEqual(e, v)))
      return `${path || "/"}: must be one of "enum"`;
    if (isObject(v) && types.includes("object")) return checkObject(schema, v, path, depth);
    if (Array.isArray(v) && types.includes("array")) {
      const { items, minItems = 0, maxItems = Number.POSITIVE_INFINITY } = schema as Record<string, number>;
      if (v.length < minItems) return `${path || "/"}: must have at least ${minItems} items`;
      if (v.length > maxItems) return `${path || "/"}: must have at most ${maxItems} items`;
      if (items === undefined) return null;
      for (const [i, item] of v.entries()) {
        const miss = check(items, item, at(path, i), depth + 1);
        if (miss) return miss;
      }
    }
    return null;
  };
  const checkObject = (schema: Schema, v: Record<string, unknown>, path: string, depth: number) => {
    const properties = (schema.properties ?? {}) as Schema;
    const names = Object.keys(properties);
    const required = (schema.required ?? []) as string[];
    for (const name of required)
      if (!Object.hasOwn(v, name)) return `${path || "/"}: lacks the required property "${name}"`;
    if (names.length === 0 && schema.additionalProperties !== false) {
      const each = schema.additionalProperties;
      if (each === undefined || each === true) return null;
      for (const [key, member] of Object.entries(v)) {
        const miss = check(each, member, at(path, key), depth + 1);
        if (miss) return miss;
      }
      return null;
    }
    for (const [key, member] of Object.entries(v)) {
      if (!Object.hasOwn(properties, key)) return `${at(path, key)}: is not a property of the schema`;
      const miss = check(properties[key], member, at(path, key), depth + 1);
      if (miss) return miss;
    }
    return null;
  };
  return check(root, value, "", 0);
}
