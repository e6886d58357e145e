import assert from "node:assert/strict";
import { test } from "node:test";
import { compileGrammar } from "./compile.js";
import { checkJsonSchema, type JsonSchema, type OutputGrammar, SchemaError } from "./index.js";
import { advanceBytes, canEnd, initialState, isFinal, minBytes } from "./matcher.js";

const utf8 = new TextEncoder();

/** Whether `text` is a complete text of the grammar. */
function accepts(grammar: OutputGrammar, text: string): boolean {
  const state = advanceBytes(initialState(compileGrammar(grammar)), utf8.encode(text));
  return state.length > 0 && canEnd(state);
}

/** Whether `text` is the beginning of some text of the grammar. */
function prefix(grammar: OutputGrammar, text: string): boolean {
  return advanceBytes(initialState(compileGrammar(grammar)), utf8.encode(text)).length > 0;
}

const json = (schema: JsonSchema | null): OutputGrammar => ({ kind: "json", schema });

function check(schema: JsonSchema, valid: string[], invalid: string[]): void {
  for (const text of valid) {
    assert.ok(accepts(json(schema), text), `${JSON.stringify(schema)} should accept ${text}`);
    JSON.parse(text); // the cases themselves are JSON
  }
  for (const text of invalid)
    assert.ok(!accepts(json(schema), text), `${JSON.stringify(schema)} should refuse ${text}`);
}

test("type string: escapes, UTF-8, no raw control characters", () => {
  check(
    { type: "string" },
    ['""', '"plain"', '"a\\"b\\\\c\\/d\\b\\f\\n\\r\\t"', '"\\u00e9\\uD83D\\uDE42"', '"Grüße 日本 🙂"'],
    ['"unterminated', "'single'", '"bad \\x escape"', '"\\u12G4"', '"tab\there"', "plain", '"a" '],
  );
  const s = json({ type: "string" });
  assert.ok(!prefix(s, '"\u0001'));
  // UTF-8 bytes are checked: a lone continuation byte or an overlong lead never passes
  const state = initialState(compileGrammar(s));
  assert.equal(advanceBytes(state, Uint8Array.of(0x22, 0x80)).length, 0);
  assert.equal(advanceBytes(state, Uint8Array.of(0x22, 0xc0)).length, 0);
  assert.equal(advanceBytes(state, Uint8Array.of(0x22, 0xed, 0xa0)).length, 0); // a UTF-16 surrogate
  assert.equal(advanceBytes(state, Uint8Array.of(0x22, 0xe6, 0x97)).length, 1); // half of 日, more to come
});

test("type number and integer: JSON number syntax, bounded length", () => {
  check(
    { type: "number" },
    ["0", "-0", "12", "-3.25", "1e5", "2.5E-3", "6.02e+23", "123456789012345"],
    ["01", "+1", ".5", "1.", "1e", "--1", "0x10", "NaN", "1234567890123456", "1e1234"],
  );
  check(
    { type: "integer" },
    ["0", "-7", "42", "123456789012345"],
    ["1.0", "1e3", "-", "007", "1234567890123456"],
  );
});

test("type boolean and null, and type lists (nullable)", () => {
  check({ type: "boolean" }, ["true", "false"], ["True", "1", "null", '"true"']);
  check({ type: "null" }, ["null"], ["nul", "None", "false"]);
  check({ type: ["string", "null"] }, ['"x"', "null"], ["1", "true"]);
  check({ type: ["integer", "number"] }, ["1", "1.5"], ['"1"']);
});

test("objects: declared order, required, optional properties, at most one space after : and ,", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "integer" }, b: { type: "string" }, c: { type: "boolean" } },
    required: ["a", "c"],
    additionalProperties: false,
  };
  check(
    schema,
    ['{"a":1,"b":"x","c":true}', '{"a":1,"c":false}', '{"a": 1, "b": "x", "c": true}'],
    [
      '{"c":true,"a":1}', // declared order only
      '{"a":1}', // c is required
      '{"a":1,"b":"x"}',
      '{"a":1,"c":true,"d":1}', // no other properties
      '{ "a":1,"c":true}', // no space after {
      '{"a":  1,"c":true}', // one space at most
      '{"a":1,"c":true} ',
    ],
  );
  check(
    { type: "object", properties: { a: { type: "null" } } },
    ["{}", '{"a":null}'],
    ['{"a":1}', '{"b":null}'],
  );
  check({ type: "object", properties: {}, additionalProperties: false }, ["{}"], ['{"a":1}']);
  // nested objects; object keywords without "type" mean an object
  check(
    {
      properties: { p: { type: "object", properties: { q: { type: "number" } }, required: ["q"] } },
      required: ["p"],
    },
    ['{"p":{"q":1.5}}'],
    ['{"p":{}}', '{"p":1}'],
  );
});

test("free-form objects: any members, or values of additionalProperties' schema", () => {
  check(
    { type: "object" },
    ["{}", '{"x":[1,{"y":null}],"z":"w"}', '{"a": true, "b": -1.5e3}'],
    ["[]", '{"a"}', "{a:1}"],
  );
  check(
    { type: "object", additionalProperties: { type: "integer" } },
    ['{"n":1,"m":2}', "{}"],
    ['{"n":"1"}'],
  );
  check(true, ["1", '"s"', "null", '[1,"a",[{}]]', '{"k":{"k":{}}}'], ["", "undefined", "[1,]", '{"a":1,}']);
});

test("arrays: items, minItems, maxItems", () => {
  check(
    { type: "array", items: { type: "integer" } },
    ["[]", "[1]", "[1,2, 3]"],
    ["[1,]", "[,1]", '[1,"2"]', "[1 ,2]"],
  );
  check(
    { type: "array", items: { type: "boolean" }, minItems: 1, maxItems: 2 },
    ["[true]", "[true,false]"],
    ["[]", "[true,true,true]"],
  );
  check({ type: "array" }, ["[]", '[1,"x",null,[]]'], ["[1,,2]"]);
  check({ maxItems: 0 }, ["[]"], ["[1]"]);
});

test("enum and const: exactly the listed values, of the schema's type", () => {
  check(
    { enum: ["red", "green", 3, null, { a: [1] }] },
    ['"red"', '"green"', "3", "null", '{"a":[1]}'],
    ['"blue"', '"re"', "4"],
  );
  check({ type: "string", enum: ["a", 1] }, ['"a"'], ["1"]);
  check({ const: "fixed" }, ['"fixed"'], ['"other"']);
  check({ type: "integer", const: 5 }, ["5"], ["6"]);
  assert.throws(
    () => checkJsonSchema({ type: "string", enum: [1, 2] }),
    (e: SchemaError) => e.keyword === "enum" && e.path === "/enum",
  );
});

test("anyOf, $defs/definitions with $ref, recursion", () => {
  check({ anyOf: [{ type: "integer" }, { type: "string" }] }, ["1", '"a"'], ["true"]);
  const tree = {
    $defs: {
      node: {
        type: "object",
        properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" } } },
        required: ["v", "kids"],
        additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  };
  check(
    tree,
    ['{"v":1,"kids":[]}', '{"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]}]}'],
    ['{"v":1,"kids":[{"v":2}]}'],
  );
  check(
    {
      definitions: {
        n: { anyOf: [{ type: "null" }, { type: "array", items: { $ref: "#/definitions/n" } }] },
      },
      $ref: "#/definitions/n",
    },
    ["null", "[]", "[null,[null,[]]]"],
    ["[1]"],
  );
  check(
    {
      type: "object",
      properties: { self: { anyOf: [{ $ref: "#" }, { type: "null" }] } },
      required: ["self"],
    },
    ['{"self":null}', '{"self":{"self":null}}'],
    ['{"self":{}}'],
  );
});

test("annotations are accepted and ignored", () => {
  check(
    {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $id: "x",
      title: "t",
      description: "d",
      default: 1,
      examples: [1],
      $comment: "c",
      type: "integer",
    },
    ["1"],
    ['"1"'],
  );
});

test("unsupported keywords are refused naming the keyword and its JSON pointer", () => {
  const cases: [JsonSchema, string, string][] = [
    [{ type: "string", pattern: "^a" }, "pattern", "/pattern"],
    [{ type: "string", format: "email" }, "format", "/format"],
    [{ type: "string", minLength: 1 }, "minLength", "/minLength"],
    [{ type: "integer", minimum: 0 }, "minimum", "/minimum"],
    [{ oneOf: [{ type: "string" }] }, "oneOf", "/oneOf"],
    [{ allOf: [{ type: "string" }] }, "allOf", "/allOf"],
    [{ not: { type: "string" } }, "not", "/not"],
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema and the grammar contract name it so
    [{ if: {}, then: {}, else: {} }, "if", "/if"],
    [{ type: "object", patternProperties: { "^a": {} } }, "patternProperties", "/patternProperties"],
    [{ type: "array", prefixItems: [] }, "prefixItems", "/prefixItems"],
    [
      { type: "object", properties: { a: { type: "array", items: { type: "string", format: "date" } } } },
      "format",
      "/properties/a/items/format",
    ],
    [{ $defs: { x: { uniqueItems: true } }, type: "null" }, "uniqueItems", "/$defs/x/uniqueItems"],
    [
      { type: "object", properties: { a: {} }, additionalProperties: true },
      "additionalProperties",
      "/additionalProperties",
    ],
    [{ type: "array", items: [{ type: "string" }] }, "items", "/items"],
    [{ type: "date" }, "type", "/type"],
    [{ $ref: "https://example.com/s.json" }, "$ref", "/$ref"],
    [{ $ref: "#/$defs/missing" }, "$ref", "/$ref"],
    [{ $defs: { a: { $ref: "#/$defs/a" } }, type: "null" }, "$ref", "/$defs/a/$ref"],
    [{ type: "object", properties: { a: { type: "string" } }, required: ["b"] }, "required", "/required"],
    [{ anyOf: [{ type: "string" }], type: "string" }, "type", "/type"],
    [{ properties: { "a/b": { nullable: true } } }, "nullable", "/properties/a~1b/nullable"],
    [false, "false", ""],
  ];
  for (const [schema, keyword, path] of cases) {
    assert.throws(
      () => checkJsonSchema(schema),
      (error: unknown) =>
        error instanceof SchemaError &&
        error.keyword === keyword &&
        error.path === path &&
        error.message.includes(path || "/"),
      `${JSON.stringify(schema)} → ${keyword} at ${path}`,
    );
  }
  // the caller's pointer prefixes the path
  assert.throws(
    () => checkJsonSchema({ type: "string", pattern: "x" }, "/response_format/json_schema/schema"),
    (e: SchemaError) => e.path === "/response_format/json_schema/schema/pattern",
  );
});

test("grammar combinators: literal, sequence, choice, repeat", () => {
  const g: OutputGrammar = {
    kind: "sequence",
    items: [
      { kind: "literal", text: "<call>" },
      {
        kind: "repeat",
        item: {
          kind: "choice",
          options: [
            { kind: "literal", text: "a" },
            { kind: "json", schema: { type: "integer" } },
          ],
        },
        separator: { kind: "literal", text: ";" },
        min: 1,
        max: 3,
      },
      { kind: "literal", text: "</call>" },
    ],
  };
  for (const text of ["<call>a</call>", "<call>1;a;22</call>"]) assert.ok(accepts(g, text), text);
  for (const text of ["<call></call>", "<call>a;a;a;a</call>", "<call>a;</call>", "call>a</call>"])
    assert.ok(!accepts(g, text), text);
  const final = advanceBytes(initialState(compileGrammar(g)), utf8.encode("<call>a</call>"));
  assert.ok(isFinal(final), "nothing may follow a complete sequence");
  assert.equal(minBytes(initialState(compileGrammar(g))), "<call>a</call>".length);
});

test("lazy: free text until the trigger, then the grammar, then nothing", () => {
  const g: OutputGrammar = {
    kind: "lazy",
    trigger: "<tool_call>",
    // biome-ignore lint/suspicious/noThenProperty: the grammar contract names the field `then`
    then: {
      kind: "sequence",
      items: [
        { kind: "literal", text: "<tool_call>" },
        { kind: "json", schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
        { kind: "literal", text: "</tool_call>" },
      ],
    },
  };
  assert.ok(accepts(g, ""));
  assert.ok(accepts(g, "Just an answer, with <tool and <tool_cal mentioned."));
  assert.ok(accepts(g, 'Let me look. <tool_call>{"n":1}</tool_call>'));
  assert.ok(!accepts(g, "<tool_call>{}</tool_call>"));
  assert.ok(!prefix(g, "<tool_call>plain"));
  assert.ok(!accepts(g, "<tool_call>"));
  const done = advanceBytes(initialState(compileGrammar(g)), utf8.encode('<tool_call>{"n": 2}</tool_call>'));
  assert.ok(isFinal(done));
});

test("malformed grammars are refused before generating", () => {
  const bad: unknown[] = [
    { kind: "regex", pattern: "a" },
    { kind: "choice", options: [] },
    { kind: "repeat", item: { kind: "literal", text: "a" }, min: 2, max: 1 },
    { kind: "repeat", item: { kind: "literal", text: "" }, min: 0 },
    // biome-ignore lint/suspicious/noThenProperty: the grammar contract names the field `then`
    { kind: "sequence", items: [{ kind: "lazy", trigger: "x", then: { kind: "literal", text: "x" } }] },
    // biome-ignore lint/suspicious/noThenProperty: the grammar contract names the field `then`
    { kind: "lazy", trigger: "<a>", then: { kind: "literal", text: "<b>" } },
    // biome-ignore lint/suspicious/noThenProperty: the grammar contract names the field `then`
    { kind: "lazy", trigger: "", then: { kind: "literal", text: "x" } },
  ];
  for (const grammar of bad) {
    assert.throws(() => compileGrammar(grammar as OutputGrammar), /grammar/, JSON.stringify(grammar));
  }
  assert.throws(() => compileGrammar(json({ type: "string", format: "uri" })), SchemaError);
});
