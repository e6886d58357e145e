import assert from "node:assert/strict";
import { test } from "node:test";
import { grade } from "./grade.js";
import { GradeError } from "./grade-errors.js";
import { parseGrader } from "./grader-schema.js";
import { sampleOf } from "./templates.js";

const stringCheck = (operation: string, reference = "{{item.answer}}") =>
  parseGrader({ type: "string_check", name: "c", operation, input: "{{sample.output_text}}", reference });
const rewardOf = async (
  grader: ReturnType<typeof parseGrader>,
  text: string,
  item: unknown = { answer: "Paris" },
) => (await grade(grader, { item, sample: sampleOf(text) })).reward;

test("string_check: eq and ne case-sensitive, like contains, ilike contains ignoring case", async () => {
  assert.equal(await rewardOf(stringCheck("eq"), "Paris"), 1);
  assert.equal(await rewardOf(stringCheck("eq"), "paris"), 0);
  assert.equal(await rewardOf(stringCheck("ne"), "paris"), 1);
  assert.equal(await rewardOf(stringCheck("ne"), "Paris"), 0);
  assert.equal(await rewardOf(stringCheck("like"), "It is Paris."), 1);
  assert.equal(await rewardOf(stringCheck("like"), "It is PARIS."), 0);
  assert.equal(await rewardOf(stringCheck("ilike"), "It is PARIS."), 1);
  assert.equal(await rewardOf(stringCheck("ilike"), "Rome"), 0);
});

test("json_schema: 1 for JSON the schema accepts, 0 for other JSON or text that is not JSON", async () => {
  const g = parseGrader({
    type: "json_schema",
    name: "shape",
    schema: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
  });
  assert.equal(await rewardOf(g, '{"city": "Oslo"}'), 1);
  assert.equal(await rewardOf(g, '{"city": 3}'), 0);
  assert.equal(await rewardOf(g, "Oslo"), 0);
});

test("multi: the formula over the sub-graders' rewards, each reported", async () => {
  const g = parseGrader({
    type: "multi",
    name: "m",
    graders: {
      city: {
        type: "string_check",
        name: "city",
        operation: "eq",
        input: "{{sample.output_json.city}}",
        reference: "{{item.answer}}",
      },
      close: {
        type: "text_similarity",
        name: "close",
        evaluation_metric: "fuzzy_match",
        input: "{{sample.output_json.city}}",
        reference: "{{item.answer}}",
      },
    },
    calculate_output: "0.5 * city + 0.5 * close",
  });
  const exact = await grade(g, { item: { answer: "Paris" }, sample: sampleOf('{"city": "Paris"}') });
  assert.deepEqual(exact, { reward: 1, subRewards: { city: 1, close: 1 }, sampleParseError: null });
  const near = await grade(g, { item: { answer: "Paris" }, sample: sampleOf('{"city": "Pari"}') });
  assert.deepEqual(near.subRewards, { city: 0, close: 8 / 9 });
  assert.equal(near.reward, 4 / 9);
  // not JSON: each sub-grader reading output_json grades 0, and the flag says why
  const text = await grade(g, { item: { answer: "Paris" }, sample: sampleOf("Paris") });
  assert.equal(text.reward, 0);
  assert.match(text.sampleParseError ?? "", /grader\.graders\.city\.input: .*it is not JSON/);
  // the item lacks the field: no grade at all
  await assert.rejects(
    () => grade(g, { item: { city: "Paris" }, sample: sampleOf('{"city": "Paris"}') }),
    (e) => e instanceof GradeError && e.code === "invalid_variable" && e.param === "item",
  );
});

test("score_model: the judge gets the filled prompt; its result is the reward inside range, else the sample fails", async () => {
  const g = parseGrader({
    type: "score_model",
    name: "judge",
    model: "test/tiny",
    input: [
      { role: "developer", content: "Score from 0 to 10." },
      { role: "user", content: "Q: {{item.question}} A: {{sample.output_text}}" },
    ],
    range: [0, 10],
  });
  const asked: unknown[] = [];
  const judging = (answer: string) => ({
    judge: async (_grader: unknown, messages: unknown) => {
      asked.push(messages);
      return answer;
    },
  });
  const ctx = { item: { question: "2+2?" }, sample: sampleOf("4") };
  assert.equal((await grade(g, ctx, judging('{"result": 7.5}'))).reward, 7.5);
  assert.deepEqual(asked[0], [
    { role: "system", content: "Score from 0 to 10." },
    { role: "user", content: "Q: 2+2? A: 4" },
  ]);
  const fails = (answer: string, param: string, message: RegExp) =>
    assert.rejects(
      () => grade(g, ctx, judging(answer)),
      (e) =>
        e instanceof GradeError &&
        e.code === "invalid_reward" &&
        e.param === param &&
        message.test(e.message),
    );
  await fails('{"result": 11}', "grader.range", /scored 11, outside "range" \[0, 10\]/);
  await fails('{"result": 1', "grader.model", /not \{"result": <number>\}/);
});
