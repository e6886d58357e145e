// Schema conformance on the bundled base model: random sampling at temperature
// 1.5 under each schema of a corpus, every output checked by an independent
// validator (ajv). Whatever the 2.4M-parameter model writes, the text must
// parse and validate; the token budget is kept tight so the budget steering
// (closing the value before max_tokens) is exercised on most samples.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { Ajv } from "ajv";
import { createGenerator } from "../generation/generate.js";
import { loadModel } from "../loading/load.js";
import type { GenerationResult, Generator, Model } from "../types.js";
import { compileGrammar } from "./compile.js";
import type { JsonSchema, OutputGrammar } from "./grammar.js";
import { initialState, minBytes } from "./matcher.js";

const BUNDLED = new URL("../../../../../models/pico-llama/", import.meta.url).pathname;
const SAMPLES_PER_SCHEMA = 200;

const person = {
  type: "object",
  properties: {
    name: { type: "string", description: "full name" },
    age: { type: "integer" },
    email: { type: ["string", "null"] },
    tags: { type: "array", items: { type: "string", enum: ["new", "vip", "blocked"] }, maxItems: 3 },
  },
  required: ["name", "age", "email", "tags"],
  additionalProperties: false,
};

const CORPUS: [string, JsonSchema | null][] = [
  ["any object (json_object)", null],
  ["flat object", person],
  [
    "nested objects, optional properties",
    {
      type: "object",
      properties: {
        order: {
          type: "object",
          properties: { id: { type: "integer" }, total: { type: "number" }, note: { type: "string" } },
          required: ["id", "total"],
          additionalProperties: false,
        },
        rush: { type: "boolean" },
      },
      required: ["order"],
      additionalProperties: false,
    },
  ],
  ["array of integers with bounds", { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 5 }],
  [
    "enum and const",
    {
      type: "object",
      properties: { kind: { const: "ticket" }, level: { enum: ["low", "high", 3, null, true] } },
      required: ["kind", "level"],
    },
  ],
  [
    "anyOf and nullable types",
    {
      anyOf: [
        { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
        { type: ["number", "null"] },
        { type: "string" },
      ],
    },
  ],
  [
    "$ref recursion (a tree)",
    {
      $defs: {
        node: {
          type: "object",
          properties: {
            label: { type: "string" },
            children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 },
          },
          required: ["label", "children"],
          additionalProperties: false,
        },
      },
      $ref: "#/$defs/node",
    },
  ],
  [
    "tool call shape",
    {
      type: "object",
      properties: {
        name: { enum: ["lookup_order", "create_ticket"] },
        arguments: {
          anyOf: [
            {
              type: "object",
              properties: { order_id: { type: "string" } },
              required: ["order_id"],
              additionalProperties: false,
            },
            {
              type: "object",
              properties: { subject: { type: "string" }, priority: { enum: ["low", "high"] } },
              required: ["subject", "priority"],
              additionalProperties: false,
            },
          ],
        },
      },
      required: ["name", "arguments"],
      additionalProperties: false,
    },
  ],
  ["free-form map of numbers", { type: "object", additionalProperties: { type: "number" } }],
  ["any JSON value", true],
];

let model: Model;
let generator: Generator;
const ajv = new Ajv({ strict: false });

before(async () => {
  model = await loadModel(BUNDLED);
  generator = createGenerator(model, { maxBatch: 64 });
});

const PROMPTS = ["Answer in JSON.", "Tell me about the weather.", "List three things.", "Call a tool."];

/** Fewest bytes of a text of the grammar: a budget of at least this many tokens always closes the value. */
function fewestBytes(grammar: OutputGrammar): number {
  return minBytes(initialState(compileGrammar(grammar)));
}

async function sample(
  grammar: OutputGrammar,
  n: number,
  maxTokens: (i: number) => number,
): Promise<GenerationResult[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      generator.complete({
        messages: [{ role: "user", content: PROMPTS[i % PROMPTS.length] }],
        grammar,
        temperature: 1.5,
        seed: 1000 + i,
        maxTokens: maxTokens(i),
      }),
    ),
  );
}

for (const [name, schema] of CORPUS) {
  test(`conformance: ${name}: ${SAMPLES_PER_SCHEMA} samples at temperature 1.5 all parse and validate`, async () => {
    const validate = ajv.compile(schema ?? { type: "object" });
    // budgets from just enough to roomy
    const grammar: OutputGrammar = { kind: "json", schema };
    const least = fewestBytes(grammar);
    const results = await sample(grammar, SAMPLES_PER_SCHEMA, (i) => least + (i % 48));
    for (const result of results) {
      // "length" only where the text is complete but could go on (a top-level number)
      assert.ok(
        result.finishReason === "stop" || /[0-9]$/.test(result.text),
        `finished by the grammar: ${JSON.stringify(result.text)}`,
      );
      let value: unknown;
      assert.doesNotThrow(
        () => {
          value = JSON.parse(result.text);
        },
        `JSON: ${JSON.stringify(result.text)}`,
      );
      assert.ok(validate(value), `${JSON.stringify(result.text)}: ${ajv.errorsText(validate.errors)}`);
    }
  });
}

test("conformance: lazy tool call (free text, or a call after the trigger) and repeated calls", async () => {
  const call: OutputGrammar = {
    kind: "sequence",
    items: [
      { kind: "literal", text: "<tool_call>" },
      { kind: "json", schema: CORPUS[7][1] },
      { kind: "literal", text: "</tool_call>" },
    ],
  };
  const lazy: OutputGrammar = {
    kind: "lazy",
    trigger: "<tool_call>",
    // biome-ignore lint/suspicious/noThenProperty: the grammar contract names the field `then`
    then: { kind: "repeat", item: call, separator: { kind: "literal", text: "\n" }, min: 1, max: 2 },
  };
  const validate = ajv.compile(CORPUS[7][1] as object);
  // the bundled model never writes the trigger by itself: the prompt's last line starts it
  const results = await sample(lazy, 150, (i) => 40 + (i % 40));
  const repeated: OutputGrammar = {
    kind: "repeat",
    item: call,
    separator: { kind: "literal", text: "\n" },
    min: 1,
    max: 3,
  };
  const least = fewestBytes(repeated);
  const required = await sample(repeated, 150, (i) => least + (i % 60));
  let calls = 0;
  for (const result of [...results, ...required]) {
    const at = result.text.indexOf("<tool_call>");
    if (at < 0) {
      assert.notEqual(result.finishReason, "cancelled");
      continue;
    }
    const parts = result.text.slice(at).split("\n");
    for (const part of parts) {
      const m = /^<tool_call>(.*)<\/tool_call>$/s.exec(part);
      assert.ok(m, `a complete call: ${JSON.stringify(result.text)}`);
      assert.ok(validate(JSON.parse(m[1])), m[1]);
      calls++;
    }
    // "length" only where the calls are complete but another could follow
    assert.notEqual(result.finishReason, "cancelled");
  }
  assert.ok(calls >= 150, `${calls} calls`);
});

test("budget: a budget below the fewest tokens of a valid text ends with finish_reason length", async () => {
  const grammar: OutputGrammar = { kind: "json", schema: person };
  // {"name":"","age":0,"email":null,"tags":[]} is 43 bytes; the model's tokens hold ~2-4 bytes each
  const [tooSmall] = await sample(grammar, 1, () => 3);
  assert.equal(tooSmall.finishReason, "length");
  assert.equal(tooSmall.completionTokens, 3);
  // a budget of exactly the fewest bytes always closes, one token per byte at worst
  const results = await sample(grammar, 40, () => fewestBytes(grammar));
  for (const result of results) {
    assert.equal(result.finishReason, "stop");
    assert.doesNotThrow(() => JSON.parse(result.text), result.text);
  }
});
