import assert from "node:assert/strict";
import { it } from "node:test";
import { ApiError } from "./api-error.js";
import {
  array,
  byKind,
  literal,
  nullable,
  number,
  object,
  oneOf,
  optional,
  parseBody,
  string,
} from "./validate.js";

const body = object({
  name: string({ min: 1 }),
  hyperparameters: optional(
    object({ learningRate: optional(number({ positive: true })), tags: optional(array(oneOf(["a", "b"]))) }),
  ),
  target: optional(byKind({ x: object({ kind: literal("x"), n: nullable(number({ integer: true })) }) })),
});

const messageOf = (value: unknown) => {
  try {
    parseBody(body, value);
  } catch (error) {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 400);
    return error.message;
  }
  assert.fail("expected a validation error");
};

it("names the field path in every message", () => {
  assert.equal(messageOf({}), `"name" is required`);
  assert.equal(messageOf({ name: 1 }), `"name" must be a string (got number)`);
  assert.equal(messageOf({ name: "n", extra: 1 }), `"extra" is not a known field`);
  assert.equal(
    messageOf({ name: "n", hyperparameters: { learningRate: 0 } }),
    `"hyperparameters.learningRate" must be a positive number`,
  );
  assert.equal(
    messageOf({ name: "n", hyperparameters: { tags: ["c"] } }),
    `"hyperparameters.tags[0]" must be one of "a", "b"`,
  );
  assert.equal(messageOf({ name: "n", target: { kind: "y" } }), `"target.kind" must be one of "x"`);
  assert.equal(messageOf({ name: "n", target: { kind: "x", n: 1.5 } }), `"target.n" must be an integer`);
  assert.equal(messageOf("text"), `"body" must be a JSON object (got string)`);
});

it("returns typed values and drops absent optional fields", () => {
  assert.deepEqual(parseBody(body, { name: "n", target: { kind: "x", n: null } }), {
    name: "n",
    target: { kind: "x", n: null },
  });
});

it("names of Object.prototype's members are no field and no kind (JSON.parse makes them own keys)", () => {
  for (const key of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
    assert.equal(messageOf(JSON.parse(`{"name":"n","${key}":1}`)), `"${key}" is not a known field`);
    assert.equal(
      messageOf({ name: "n", target: { kind: key } }),
      `"target.kind" must be one of "x"`,
      `kind ${key}`,
    );
  }
});
