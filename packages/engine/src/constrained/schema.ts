// JSON Schema (the subset OpenAI's strict mode supports) → grammar nodes.
//
// Supported: type (one or a list) string, number, integer, boolean, null,
// object (properties, required, additionalProperties), array (items,
// minItems, maxItems), enum, const, anyOf, $defs / definitions with $ref
// (local pointers, recursion allowed). Annotations are accepted and ignored.
// Every other keyword is refused with a SchemaError naming it and its pointer,
// so a schema is never silently enforced only in part.
//
// A schema's cost is bounded before anything is generated (schema-budget.ts).
//
// The generated JSON is compact: properties in declared order, at most one
// space after `:` and `,` and none elsewhere, so a model cannot spend its
// tokens on whitespace.
import { type JsonSchema, pointerTo, SchemaError } from "./grammar.js";
import { describe, isObject, jsonEqual, resolvePointer } from "./json-values.js";
import {
  type AltNode,
  alt,
  computeMinLengths,
  type GNode,
  lit,
  num,
  obj,
  rep,
  seq,
  str,
  ws,
} from "./nodes.js";
import {
  MAX_COMPILE_DEPTH,
  MAX_ENUM_VALUES,
  MAX_SUBSCHEMAS,
  newSchemaBudget,
  type SchemaBudget,
} from "./schema-budget.js";
import { finish, type Steps } from "./steps.js";

const ANNOTATIONS = new Set(["title", "description", "default", "examples", "$schema", "$id", "$comment"]);
const KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "enum",
  "const",
  "anyOf",
  "$defs",
  "definitions",
  "$ref",
  ...ANNOTATIONS,
]);
export const TYPES = ["string", "number", "integer", "boolean", "null", "object", "array"] as const;
export type TypeName = (typeof TYPES)[number];
export const OBJECT_KEYWORDS = ["properties", "required", "additionalProperties"];
export const ARRAY_KEYWORDS = ["items", "minItems", "maxItems"];

type Schema = Record<string, unknown>;

/** The grammar of any JSON value, and of any JSON object (built once per compilation). */
export function anyJson(): { value: GNode; object: GNode } {
  const value = alt([]);
  const space = ws();
  const member = seq([str(), lit(":"), space, value]);
  const comma = seq([lit(","), space]);
  const object = seq([lit("{"), rep(member, comma, 0, Number.POSITIVE_INFINITY), lit("}")]);
  const array = seq([lit("["), rep(value, comma, 0, Number.POSITIVE_INFINITY), lit("]")]);
  value.options.push(object, array, str(), num(false), lit("true"), lit("false"), lit("null"));
  return { value, object };
}

class SchemaCompiler {
  private readonly refs = new Map<string, AltNode>();
  private any: { value: GNode; object: GNode } | null = null;
  private depth = 0;

  constructor(
    private readonly root: unknown,
    private readonly base: string,
    private readonly budget: SchemaBudget,
  ) {}

  private anyJson() {
    this.any ??= anyJson();
    return this.any;
  }

  /**
   * `unguarded`: the $ref targets being compiled since the last object or
   * array was entered; a $ref back to one of them would recurse without
   * consuming a byte.
   */
  *compile(schema: unknown, path: string, unguarded: ReadonlySet<string>): Steps<GNode> {
    yield; // a piece of work per subschema
    if (++this.budget.subschemas > MAX_SUBSCHEMAS)
      throw new SchemaError("schema", path, `the schemas hold more than ${MAX_SUBSCHEMAS} schemas in all`);
    if (this.depth >= MAX_COMPILE_DEPTH)
      throw new SchemaError(
        "$ref",
        path,
        `the schema nests more than ${MAX_COMPILE_DEPTH} schemas deep, counting each "$ref" followed`,
      );
    this.depth++;
    try {
      return yield* this.compileOne(schema, path, unguarded);
    } finally {
      this.depth--;
    }
  }

  private *compileOne(schema: unknown, path: string, unguarded: ReadonlySet<string>): Steps<GNode> {
    if (schema === true) return this.anyJson().value;
    if (schema === false) throw new SchemaError("false", path, "the schema false admits no value");
    if (!isObject(schema)) {
      throw new SchemaError(
        "schema",
        path,
        `a schema must be an object or a boolean, got ${describe(schema)}`,
      );
    }
    for (const key of Object.keys(schema)) {
      if (!KEYWORDS.has(key)) {
        throw new SchemaError(
          key,
          pointerTo(path, key),
          `the JSON Schema keyword "${key}" is not supported (supported: ${[...KEYWORDS].filter((k) => !ANNOTATIONS.has(k)).join(", ")})`,
        );
      }
    }
    for (const defs of ["$defs", "definitions"]) {
      if (schema[defs] === undefined) continue;
      if (!isObject(schema[defs]))
        throw new SchemaError(defs, pointerTo(path, defs), `"${defs}" must be an object`);
      // every definition is checked, used or not
      for (const name of Object.keys(schema[defs] as Schema))
        yield* this.ref(
          `#${pointerTo(pointerTo(path.slice(this.base.length), defs), name)}`,
          pointerTo(path, defs),
          new Set(),
        );
    }
    const own = Object.keys(schema).filter(
      (k) => !ANNOTATIONS.has(k) && k !== "$defs" && k !== "definitions",
    );
    // no constraint at all: any JSON value, one shared grammar instead of a new one per empty schema
    if (own.length === 0) return this.anyJson().value;
    if (schema.$ref !== undefined) {
      alone(own, "$ref", path);
      if (typeof schema.$ref !== "string")
        throw new SchemaError("$ref", pointerTo(path, "$ref"), '"$ref" must be a string');
      return yield* this.ref(schema.$ref, pointerTo(path, "$ref"), unguarded);
    }
    if (schema.anyOf !== undefined) {
      alone(own, "anyOf", path);
      const anyOf = schema.anyOf;
      const at = pointerTo(path, "anyOf");
      if (!Array.isArray(anyOf) || anyOf.length === 0)
        throw new SchemaError("anyOf", at, '"anyOf" must be a non-empty array of schemas');
      const options: GNode[] = [];
      for (const [i, option] of anyOf.entries())
        options.push(yield* this.compile(option, pointerTo(at, i), unguarded));
      return alt(options);
    }

    const types = this.types(schema, path);
    if (schema.const !== undefined || schema.enum !== undefined) return this.values(schema, types, path);
    const options: GNode[] = [];
    for (const type of types) options.push(yield* this.typed(type, schema, path));
    return options.length === 1 ? options[0] : alt(options);
  }

  /** The schema's types: its `type`, else inferred from object or array keywords, else every type. */
  private types(schema: Schema, path: string): TypeName[] {
    const type = schema.type;
    const at = pointerTo(path, "type");
    if (type === undefined) {
      if (OBJECT_KEYWORDS.some((k) => k in schema)) return ["object"];
      if (ARRAY_KEYWORDS.some((k) => k in schema)) return ["array"];
      return [...TYPES].filter((t) => t !== "integer");
    }
    const list = Array.isArray(type) ? type : [type];
    if (list.length === 0) throw new SchemaError("type", at, '"type" must not be an empty list');
    for (const t of list) {
      if (!TYPES.includes(t as TypeName))
        throw new SchemaError("type", at, `unknown type ${describe(t)} (types: ${TYPES.join(", ")})`);
    }
    // integer is a subset of number: keep number alone when both are listed
    const unique = [...new Set(list as TypeName[])];
    return unique.includes("number") ? unique.filter((t) => t !== "integer") : unique;
  }

  /** enum / const: each allowed value as a literal, those of the schema's types only. */
  private values(schema: Schema, types: TypeName[], path: string): GNode {
    this.budget.enumValues +=
      (schema.const === undefined ? 0 : 1) + (Array.isArray(schema.enum) ? schema.enum.length : 0);
    if (this.budget.enumValues > MAX_ENUM_VALUES) {
      const keyword = Array.isArray(schema.enum) ? "enum" : "const";
      throw new SchemaError(
        keyword,
        pointerTo(path, keyword),
        `the schemas hold more than ${MAX_ENUM_VALUES} "enum" and "const" values in all`,
      );
    }
    let values: unknown[];
    let keyword: string;
    if (schema.const !== undefined) {
      keyword = "const";
      values = [schema.const];
      if (schema.enum !== undefined) {
        if (!Array.isArray(schema.enum))
          throw new SchemaError("enum", pointerTo(path, "enum"), '"enum" must be an array');
        values = values.filter((v) => (schema.enum as unknown[]).some((e) => jsonEqual(e, v)));
      }
    } else {
      keyword = "enum";
      if (!Array.isArray(schema.enum) || schema.enum.length === 0) {
        throw new SchemaError("enum", pointerTo(path, "enum"), '"enum" must be a non-empty array');
      }
      values = schema.enum;
    }
    const kept = values.filter((v) => types.some((t) => hasType(v, t)));
    if (kept.length === 0) {
      throw new SchemaError(
        keyword,
        pointerTo(path, keyword),
        `no value of "${keyword}" is of the schema's type (${types.join(", ")})`,
      );
    }
    const texts = [...new Set(kept.map((v) => JSON.stringify(v)))];
    return texts.length === 1 ? lit(texts[0]) : alt(texts.map(lit));
  }

  private *typed(type: TypeName, schema: Schema, path: string): Steps<GNode> {
    switch (type) {
      case "string":
        return str();
      case "number":
        return num(false);
      case "integer":
        return num(true);
      case "boolean":
        return alt([lit("true"), lit("false")]);
      case "null":
        return lit("null");
      case "object":
        return yield* this.object(schema, path);
      case "array":
        return yield* this.array(schema, path);
    }
  }

  private *object(schema: Schema, path: string): Steps<GNode> {
    const { properties, required = [], additionalProperties } = schema;
    if (properties !== undefined && !isObject(properties))
      throw new SchemaError("properties", pointerTo(path, "properties"), '"properties" must be an object');
    const requiredAt = pointerTo(path, "required");
    if (!Array.isArray(required) || required.some((name) => typeof name !== "string")) {
      throw new SchemaError("required", requiredAt, '"required" must be an array of property names');
    }
    const names = Object.keys(properties ?? {});
    // sets: a schema may list thousands of properties
    const declared = new Set(names);
    const requiredNames = new Set(required as string[]);
    for (const name of requiredNames) {
      if (!declared.has(name))
        throw new SchemaError("required", requiredAt, `required property "${name}" is not in "properties"`);
    }
    const additionalAt = pointerTo(path, "additionalProperties");
    if (names.length === 0 && additionalProperties !== false) {
      // no declared properties: a free-form object, its values of additionalProperties' schema
      if (additionalProperties === undefined || additionalProperties === true) return this.anyJson().object;
      const value = yield* this.compile(additionalProperties, additionalAt, new Set());
      const space = ws();
      const member = seq([str(), lit(":"), space, value]);
      return seq([lit("{"), rep(member, seq([lit(","), space]), 0, Number.POSITIVE_INFINITY), lit("}")]);
    }
    if (additionalProperties !== undefined && additionalProperties !== false) {
      throw new SchemaError(
        "additionalProperties",
        additionalAt,
        'only "additionalProperties": false is supported alongside "properties" (the generated object has exactly the declared properties)',
      );
    }
    const propertiesAt = pointerTo(path, "properties");
    const members = [];
    for (const name of names) {
      const value = yield* this.compile(
        (properties as Schema)[name],
        pointerTo(propertiesAt, name),
        new Set(),
      );
      members.push({ key: name, value, required: requiredNames.has(name) });
    }
    return seq([lit("{"), obj(members)]);
  }

  private *array(schema: Schema, path: string): Steps<GNode> {
    const { items, minItems = 0, maxItems } = schema;
    const itemsAt = pointerTo(path, "items");
    if (Array.isArray(items))
      throw new SchemaError("items", itemsAt, '"items" must be one schema (tuples are not supported)');
    for (const [keyword, value] of [
      ["minItems", minItems],
      ["maxItems", maxItems ?? 0],
    ] as const) {
      if (!Number.isSafeInteger(value) || (value as number) < 0) {
        throw new SchemaError(
          keyword,
          pointerTo(path, keyword),
          `"${keyword}" must be a non-negative integer`,
        );
      }
    }
    const max = maxItems === undefined ? Number.POSITIVE_INFINITY : (maxItems as number);
    if (max < (minItems as number))
      throw new SchemaError("maxItems", pointerTo(path, "maxItems"), '"maxItems" is below "minItems"');
    const item = items === undefined ? this.anyJson().value : yield* this.compile(items, itemsAt, new Set());
    return seq([lit("["), rep(item, seq([lit(","), ws()]), minItems as number, max), lit("]")]);
  }

  /** The node of a local $ref ("#", "#/$defs/name", any JSON pointer into the root schema). */
  private *ref(ref: string, at: string, unguarded: ReadonlySet<string>): Steps<GNode> {
    if (!ref.startsWith("#"))
      throw new SchemaError("$ref", at, `only local references ("#/$defs/...") are supported, got "${ref}"`);
    let pointer: string;
    try {
      pointer = decodeURIComponent(ref.slice(1));
    } catch {
      throw new SchemaError("$ref", at, `"${ref}" is not a valid URI fragment`);
    }
    if (unguarded.has(pointer)) {
      throw new SchemaError(
        "$ref",
        at,
        `"${ref}" refers back to itself without an object or array in between`,
      );
    }
    const known = this.refs.get(pointer);
    if (known) return known;
    const target = resolvePointer(this.root, pointer);
    if (target === undefined) throw new SchemaError("$ref", at, `"${ref}" does not point into the schema`);
    const node = alt([]);
    this.refs.set(pointer, node);
    const inner = new Set(unguarded).add(pointer);
    node.options.push(yield* this.compile(target, this.base + pointer, inner));
    return node;
  }
}

/** Refuses keywords beside one that must stand alone ($ref, anyOf). */
function alone(own: string[], keyword: string, path: string): void {
  const other = own.find((k) => k !== keyword);
  if (other !== undefined) {
    throw new SchemaError(
      other,
      pointerTo(path, other),
      `"${other}" cannot be combined with "${keyword}" in one schema`,
    );
  }
}

export function hasType(value: unknown, type: TypeName): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "object":
      return isObject(value);
    case "array":
      return Array.isArray(value);
  }
}

/**
 * Compiles a schema a piece at a time (steps.ts); `path` is the JSON pointer of the schema in the caller's document (for error messages).
 * Schemas compiled into one grammar (a request's tools) share one `budget`.
 */
export function* compileSchemaSteps(schema: JsonSchema, path = "", budget = newSchemaBudget()): Steps<GNode> {
  const node = yield* new SchemaCompiler(schema, path, budget).compile(schema, path, new Set());
  yield* computeMinLengths(node);
  if (!Number.isFinite(node.min)) {
    throw new SchemaError(
      "$ref",
      path,
      "the schema admits no finite value (a required property or item recurses forever)",
    );
  }
  return node;
}

/** Throws SchemaError for anything outside the supported subset (used by the server to answer 400 before generating). */
export function checkJsonSchema(schema: unknown, path = "", budget = newSchemaBudget()): void {
  finish(compileSchemaSteps(schema as JsonSchema, path, budget));
}
