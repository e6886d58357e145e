import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../http/api-error.js";
import { paramOf } from "../http/openai-error.js";
import { graderJson, parseGrader } from "./grader-schema.js";

const check = {
  type: "string_check",
  name: "exact",
  operation: "eq",
  input: "{{sample.output_text}}",
  reference: "{{item.answer}}",
};

/** The field a refusal names (as OpenAI's `param`) and its message. */
function refusal(grader: unknown): { param: string | null; message: string } {
  try {
    parseGrader(grader);
  } catch (error) {
    assert.ok(
      error instanceof ApiError && error.status === 400 && error.code === "invalid_grader",
      String(error),
    );
    return { param: paramOf(error), message: error.message };
  }
  return assert.fail("the grader was accepted");
}

const judge = {
  type: "score_model",
  name: "judge",
  model: "svc/pico-llama",
  input: [
    { role: "system", content: "Score the answer from 0 to 1." },
    {
      role: "user",
      content: { type: "input_text", text: "{{item.question}}: {{sample.output_text}}" },
      type: "message",
    },
  ],
  range: [0, 1],
  sampling_params: { temperature: 0, seed: 1, max_completions_tokens: 32 },
};

test("every served type parses and is written back as OpenAI's JSON", () => {
  assert.deepEqual(graderJson(parseGrader(judge)), judge);
  const multi = {
    type: "multi",
    name: "both",
    graders: {
      exact: check,
      close: {
        type: "text_similarity",
        name: "close",
        evaluation_metric: "rouge_l",
        input: "{{sample.output_text}}",
        reference: "x",
        pass_threshold: 0.5,
      },
      shape: {
        type: "json_schema",
        name: "shape",
        schema: { type: "object", properties: {}, additionalProperties: false },
      },
    },
    calculate_output: "0.5 * exact + 0.5 * close * shape",
  };
  const parsed = parseGrader(multi);
  assert.equal(parsed.type, "multi");
  const json = graderJson(parsed);
  assert.deepEqual(json, {
    ...multi,
    graders: { ...multi.graders, shape: { ...multi.graders.shape, input: "{{sample.output_text}}" } },
  });
  assert.deepEqual(graderJson(parseGrader(check)), check);
});

test("refusals name the field: unknown types, keys, operations, metrics, templates, schemas, formulas", () => {
  const cases: [unknown, string, RegExp][] = [
    [{ ...check, type: "regex" }, "grader.type", /must be one of "string_check"/],
    [{ ...check, type: undefined }, "grader.type", /is required/],
    [{ ...check, extra: 1 }, "grader.extra", /is not a known field/],
    [{ ...check, operation: "contains" }, "grader.operation", /must be one of "eq", "ne", "like", "ilike"/],
    [{ ...check, reference: "{{ reference_answer }}" }, "grader.reference", /the only namespaces/],
    [{ ...check, name: "" }, "grader.name", /must not be empty/],
    [
      { type: "text_similarity", name: "t", evaluation_metric: "meteor", input: "", reference: "" },
      "grader.evaluation_metric",
      /"meteor" is not served: it needs WordNet/,
    ],
    [
      { type: "text_similarity", name: "t", evaluation_metric: "cosine", input: "", reference: "" },
      "grader.evaluation_metric",
      /embedding model/,
    ],
    [
      { type: "python", name: "p", source: "def grade(s, i): return 1" },
      "grader.type",
      /does not run Python graders/,
    ],
    [{ type: "score_model", name: "j", model: "x", input: [] }, "grader.input", /must not be empty/],
    [{ ...judge, range: [1, 0] }, "grader.range", /low below high/],
    [
      { ...judge, sampling_params: { reasoning_effort: "low" } },
      "grader.sampling_params.reasoning_effort",
      /not reasoning models/,
    ],
    [
      { ...judge, input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
      "grader.input[0].content",
      /read text only/,
    ],
    [
      { ...judge, input: [{ role: "user", content: "{{ sample.output_audio }}" }] },
      "grader.input[0].content",
      /sample's variables/,
    ],
    [{ type: "label_model", name: "l" }, "grader.type", /label_model is not served/],
    [
      { type: "json_schema", name: "s", schema: { type: "string", pattern: "^a" } },
      "grader.schema.pattern",
      /"pattern" is not supported/,
    ],
    [
      { type: "multi", name: "m", graders: { a: check }, calculate_output: "a + b" },
      "grader.calculate_output",
      /names "b"/,
    ],
    [
      { type: "multi", name: "m", graders: {}, calculate_output: "1" },
      "grader.graders",
      /at least one grader/,
    ],
    [
      { type: "multi", name: "m", graders: { "a-b": check }, calculate_output: "1" },
      "grader.graders.a-b",
      /formula variable/,
    ],
    [
      {
        type: "multi",
        name: "m",
        graders: { a: { ...check, input: "{{sample.audio}}" } },
        calculate_output: "a",
      },
      "grader.graders.a.input",
      /sample's variables/,
    ],
    [
      {
        type: "multi",
        name: "m",
        graders: { a: { type: "multi", name: "n", graders: { b: check }, calculate_output: "b" } },
        calculate_output: "a",
      },
      "grader.graders.a.type",
      /must be one of/,
    ],
    [[check], "grader", /must be a grader object/],
    [
      JSON.parse(
        `{"type":"multi","name":"m","graders":{"__proto__":${JSON.stringify(check)}},"calculate_output":"1"}`,
      ),
      "grader.graders.__proto__",
      /formula variable/,
    ],
  ];
  for (const [grader, param, message] of cases) {
    const got = refusal(grader);
    assert.equal(got.param, param, got.message);
    assert.match(got.message, message);
  }
});
