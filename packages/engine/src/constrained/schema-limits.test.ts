// A hostile schema is refused with a SchemaError naming its place, never a
// RangeError from the stack or a compilation that takes seconds: $ref chains
// are bounded in depth, and a schema (or all the schemas sharing a budget) in
// the number of subschemas and enum values. Schemas within the limits compile
// to the grammar they always did.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compileGrammar } from "./compile.js";
import {
  checkJsonSchema,
  type JsonSchema,
  MAX_ENUM_VALUES,
  MAX_SUBSCHEMAS,
  newSchemaBudget,
  SchemaError,
} from "./index.js";
import { advanceBytes, canEnd, initialState } from "./matcher.js";

const utf8 = new TextEncoder();

function accepts(schema: JsonSchema, text: string): boolean {
  const state = advanceBytes(initialState(compileGrammar({ kind: "json", schema })), utf8.encode(text));
  return state.length > 0 && canEnd(state);
}

function refusal(schema: unknown, budget = newSchemaBudget()): SchemaError {
  try {
    checkJsonSchema(schema, "", budget);
  } catch (error) {
    assert.ok(error instanceof SchemaError, `expected a SchemaError, got ${error}`);
    return error;
  }
  assert.fail("the schema was accepted");
}

/** $defs a0 → a1 → … → a<links>, the last one a string; `wrap` puts each $ref inside an object or not. */
function refChain(links: number, wrap: boolean): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < links; i++) {
    const ref = { $ref: `#/$defs/a${i + 1}` };
    defs[`a${i}`] = wrap ? { type: "object", properties: { next: ref }, required: ["next"] } : ref;
  }
  defs[`a${links}`] = { type: "string" };
  return { $defs: defs, $ref: "#/$defs/a0" };
}

const properties = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, { type: "integer" }]));

test("a $ref chain thousands of links long is a SchemaError naming a link, not a stack overflow", () => {
  for (const wrap of [false, true]) {
    const error = refusal(refChain(20_000, wrap));
    assert.equal(error.keyword, "$ref");
    assert.match(error.message, /nests more than 256 schemas deep, counting each "\$ref" followed/);
    assert.match(error.path, /^\/\$defs\/a\d+/);
  }
  // a short chain, and recursion through an object, still compile
  assert.ok(accepts(refChain(20, true), '{"next":{"next":'.repeat(10) + '"x"' + "}".repeat(20)));
  assert.ok(accepts(refChain(100, false), '"x"'));
});

test("more subschemas than MAX_SUBSCHEMAS are refused at the first one past it", () => {
  const error = refusal({ type: "object", properties: properties(MAX_SUBSCHEMAS + 50) });
  assert.equal(error.path, `/properties/p${MAX_SUBSCHEMAS - 1}`);
  assert.match(error.message, new RegExp(`more than ${MAX_SUBSCHEMAS} schemas in all`));
  const anyOf = refusal({ anyOf: Array.from({ length: MAX_SUBSCHEMAS }, () => ({ type: "string" })) });
  assert.match(anyOf.path, /^\/anyOf\/\d+$/);
});

test("an object with as many required properties as the limit allows compiles and requires every one", () => {
  const count = MAX_SUBSCHEMAS - 1;
  const names = Object.keys(properties(count));
  const schema = { type: "object", properties: properties(count), required: names };
  const whole = `{${names.map((n, i) => `"${n}":${i}`).join(",")}}`;
  assert.ok(accepts(schema, whole));
  assert.ok(
    !accepts(
      schema,
      `{${names
        .slice(1)
        .map((n, i) => `"${n}":${i}`)
        .join(",")}}`,
    ),
  );
});

test("enum and const values are counted together against MAX_ENUM_VALUES", () => {
  const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
  checkJsonSchema({ enum: values(MAX_ENUM_VALUES) });
  const error = refusal({ enum: values(MAX_ENUM_VALUES + 1) });
  assert.equal(error.keyword, "enum");
  assert.equal(error.path, "/enum");
  // spread over properties, and a const beside an enum, count too
  const spread = refusal({
    type: "object",
    properties: { a: { enum: values(MAX_ENUM_VALUES - 1) }, b: { const: "x", enum: ["x", "y"] } },
  });
  assert.equal(spread.path, "/properties/b/enum");
});

test("schemas sharing a budget (a request's tools) are limited together", () => {
  const budget = newSchemaBudget();
  const half = { type: "object", properties: properties(MAX_SUBSCHEMAS / 2 - 1) };
  checkJsonSchema(half, "", budget);
  checkJsonSchema(half, "", budget);
  const error = refusal(half, budget);
  assert.match(error.message, /schemas in all/);
  // each on its own budget is fine
  checkJsonSchema(half);
});

test("an empty schema is any JSON value, as before, however many properties have one", () => {
  for (const text of ['{"a":[1,{"b":null}]}', "[]", '"s"', "-1.5e3", "true", "null"])
    assert.ok(accepts({}, text), text);
  assert.ok(!accepts({}, "{"));
  const schema = { type: "object", properties: { a: {}, b: {} }, required: ["a", "b"] };
  assert.ok(accepts(schema, '{"a":{"x":1},"b":[true]}'));
  assert.ok(!accepts(schema, '{"a":1}'));
});
