import assert from "node:assert/strict";
import { test } from "node:test";
import { checkJsonSchema } from "./schema.js";
import { schemaMismatch } from "./schema-value.js";

const person = {
  type: "object",
  properties: {
    name: { type: "string" },
    age: { type: "integer" },
    tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 2 },
    pet: { anyOf: [{ type: "null" }, { $ref: "#/$defs/pet" }] },
  },
  required: ["name", "age"],
  additionalProperties: false,
  $defs: { pet: { type: "object", properties: { kind: { const: "cat" } }, required: ["kind"] } },
};

test("values the schema's grammar admits conform; each other names where and why", () => {
  checkJsonSchema(person);
  assert.equal(schemaMismatch(person, { name: "Ada", age: 36 }), null);
  assert.equal(
    schemaMismatch(person, { age: 36, name: "Ada", tags: ["b", "a"], pet: { kind: "cat" } }),
    null,
  );
  assert.equal(schemaMismatch(person, { name: "Ada", age: 36, pet: null }), null);
  assert.equal(schemaMismatch(person, { name: "Ada" }), '/: lacks the required property "age"');
  assert.equal(schemaMismatch(person, { name: "Ada", age: 3.5 }), "/age: must be of type integer");
  assert.equal(schemaMismatch(person, { name: "Ada", age: 1, x: 1 }), "/x: is not a property of the schema");
  assert.equal(
    schemaMismatch(person, { name: "Ada", age: 1, tags: ["c"] }),
    '/tags/0: must be one of "enum"',
  );
  assert.equal(
    schemaMismatch(person, { name: "Ada", age: 1, tags: ["a", "a", "a"] }),
    "/tags: must have at most 2 items",
  );
  assert.equal(
    schemaMismatch(person, { name: "Ada", age: 1, pet: { kind: "dog" } }),
    '/pet: matches none of "anyOf"',
  );
  assert.equal(schemaMismatch(person, []), "/: must be of type object");
});

test("free-form schemas: no keywords admits anything, additionalProperties' schema applies to every member", () => {
  assert.equal(schemaMismatch({}, [1, "x", null]), null);
  assert.equal(schemaMismatch(true, 5), null);
  const counts = { type: "object", additionalProperties: { type: "number" } };
  assert.equal(schemaMismatch(counts, { a: 1, b: 2.5 }), null);
  assert.equal(schemaMismatch(counts, { a: "1" }), "/a: must be of type number");
  assert.equal(schemaMismatch({ type: ["string", "null"] }, null), null);
});
