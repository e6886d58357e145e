import assert from "node:assert/strict";
import { it } from "node:test";
import { ApiError, quoteInput } from "./api-error.js";
import {
  array,
  byKind,
  findLoneSurrogate,
  literal,
  nullable,
  number,
  object,
  oneOf,
  optional,
  parseBody,
  parseLastEventId,
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

it("quotes user input for a message: control, bidi and separator characters escaped, long text cut", () => {
  assert.equal(quoteInput("plain é 😀"), `"plain é 😀"`);
  assert.equal(quoteInput('a"b\\c'), `"a\\"b\\\\c"`);
  assert.equal(
    quoteInput("a\nb\r\u0000\u202e\u200f\u2028\u2029\u0085\ufeff"),
    `"a\\nb\\r\\u0000\\u202e\\u200f\\u2028\\u2029\\u0085\\ufeff"`,
  );
  assert.equal(quoteInput("\ud800x"), `"\\ud800x"`);
  assert.equal(quoteInput("x".repeat(200)), `"${"x".repeat(100)}…" (200 characters)`);
});

it("no error message carries a raw control or bidi character, whoever built it", () => {
  const error = new ApiError(404, "not_found", "org a\nb\u202ec\u0000 not found");
  assert.equal(error.message, "org a\\nb\\u202ec\\u0000 not found");
});

it("refuses unknown keys by their escaped name", () => {
  assert.equal(messageOf({ name: "n", "x\n\u202e": 1 }), `"x\\n\\u202e" is not a known field`);
});

it("judges integers past 2^53 by the range, not as fractions", () => {
  const check = (c: ReturnType<typeof number>, value: number) => {
    try {
      c(value, "f");
    } catch (error) {
      return (error as Error).message;
    }
    return "accepted";
  };
  const ranged = number({ integer: true, min: 1, max: 3650 });
  assert.equal(check(ranged, 2 ** 53), `"f" must be at most 3650`);
  assert.equal(check(ranged, -(2 ** 53)), `"f" must be at least 1`);
  assert.equal(check(ranged, 1.5), `"f" must be an integer`);
  assert.equal(check(number({ integer: true }), 2 ** 53), `"f" must be at most 9007199254740991 (2^53 - 1)`);
  assert.equal(
    check(number({ integer: true }), -(2 ** 60)),
    `"f" must be at least -9007199254740991 (-(2^53 - 1))`,
  );
  assert.equal(
    check(number({ integer: true, positive: true }), 2 ** 53),
    `"f" must be at most 9007199254740991 (2^53 - 1)`,
  );
  assert.equal(check(number({ integer: true }), 2 ** 53 - 1), "accepted");
});

it("finds the first lone surrogate of a JSON value by its field path, keys included", () => {
  assert.equal(findLoneSurrogate({ a: "ok 😀", b: [1, { c: "x\ud800" }] }), "b[1].c");
  assert.equal(findLoneSurrogate({ "k\udc00": 1 }), "k\udc00");
  assert.equal(findLoneSurrogate(["\udbff"]), "[0]");
  assert.equal(findLoneSurrogate("\ud83d"), "body");
  assert.equal(findLoneSurrogate({ a: "\ud83d\ude00", b: null, c: 1.5, d: true }), null);
});

it("Last-Event-ID: a plain decimal event id, nothing else", () => {
  assert.equal(parseLastEventId(undefined), 0);
  assert.equal(parseLastEventId("0"), 0);
  assert.equal(parseLastEventId("303"), 303);
  assert.equal(parseLastEventId("2147483647"), 2147483647);
  for (const raw of ["", "-0", "+1", " 1", "1 ", "01", "00", "1e0", "0x1", "1.0", "-1", "2147483648", "١"]) {
    assert.throws(
      () => parseLastEventId(raw),
      /^ApiError: "Last-Event-ID" must be an event id/,
      JSON.stringify(raw),
    );
  }
});
