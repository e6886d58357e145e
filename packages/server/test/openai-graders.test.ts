// OpenAI's graders API on a real `svc server` (loopback), driven by the
// official `openai` npm client as a script written for OpenAI drives it:
// client.fineTuning.alpha.graders.validate and .run. Each grader type svc
// serves runs on a sample and an item; every refusal (an unknown type, key or
// metric, a template outside the namespaces, a formula naming no sub-grader,
// an item lacking a field, a formula giving no finite value) comes back with
// OpenAI's status and error body naming the field. The graders touch no
// store, so one backend (SQLite) is enough here.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { call, newIdentity, serverFor, TINY_MODEL } from "./harness.js";
import { refused } from "./openai-client.js";

type Server = Awaited<ReturnType<typeof serverFor>>;
// biome-ignore lint/suspicious/noExplicitAny: graders are sent as OpenAI's JSON, some of them svc's own
type AnyGrader = any;

const exact = {
  type: "string_check",
  name: "exact",
  operation: "eq",
  input: "{{ sample.output_json.city }}",
  reference: "{{ item.answer }}",
} as const;

describe("OpenAI graders API with the official client", () => {
  let server: Server;
  let client: OpenAI;

  before(async () => {
    server = await serverFor("sqlite");
    const id = await newIdentity(server.apiUrl);
    client = new OpenAI({ apiKey: id.token, baseURL: `${server.apiUrl}/v1`, maxRetries: 0 });
  });
  after(() => server?.cleanup());

  it("validate answers the grader back as sent", async () => {
    const multi: AnyGrader = {
      type: "multi",
      name: "city and style",
      graders: {
        city: exact,
        style: {
          type: "text_similarity",
          name: "style",
          evaluation_metric: "rouge_l",
          input: "{{sample.output_text}}",
          reference: "{{item.reference}}",
        },
      },
      calculate_output: "0.8 * city + 0.2 * style",
    };
    assert.deepEqual(await client.fineTuning.alpha.graders.validate({ grader: exact }), { grader: exact });
    assert.deepEqual(await client.fineTuning.alpha.graders.validate({ grader: multi }), { grader: multi });
  });

  it("run: string_check, text_similarity, json_schema and multi give OpenAI's response", async () => {
    const run = (grader: AnyGrader, model_sample: string, item: unknown = { answer: "Paris" }) =>
      client.fineTuning.alpha.graders.run({ grader, model_sample, item });
    const hit = await run(exact, '{"city": "Paris"}');
    assert.equal(hit.reward, 1);
    assert.deepEqual(hit.sub_rewards, {});
    assert.deepEqual(hit.model_grader_token_usage_per_model, {});
    assert.equal(hit.metadata.name, "exact");
    assert.equal(hit.metadata.type, "string_check");
    assert.deepEqual(hit.metadata.scores, { exact: 1 });
    assert.equal(typeof hit.metadata.execution_time, "number");
    assert.equal(hit.metadata.sampled_model_name, null);
    assert.equal(hit.metadata.token_usage, null);
    assert.equal(Object.values(hit.metadata.errors).filter((v) => v === true).length, 0);
    assert.equal((await run(exact, '{"city": "Rome"}')).reward, 0);

    // not JSON: the completion's own failure, 0 and flagged
    const text = await run(exact, "Paris");
    assert.equal(text.reward, 0);
    assert.equal(text.metadata.errors.sample_parse_error, true);

    const rouge = await run(
      {
        type: "text_similarity",
        name: "r",
        evaluation_metric: "rouge_1",
        input: "{{sample.output_text}}",
        reference: "{{item.answer}}",
      },
      "the cat sat",
      { answer: "the cat sat on the mat" },
    );
    assert.ok(Math.abs(rouge.reward - 2 / 3) < 1e-12);

    const schema: AnyGrader = {
      type: "json_schema",
      name: "shape",
      schema: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
        additionalProperties: false,
      },
    };
    assert.equal((await run(schema, '{"city": "Oslo"}')).reward, 1);
    assert.equal((await run(schema, '{"town": "Oslo"}')).reward, 0);

    const multi = await run(
      {
        type: "multi",
        name: "m",
        graders: { city: exact, shape: schema },
        calculate_output: "max(city, 0.25) * shape",
      } as AnyGrader,
      '{"city": "Rome"}',
    );
    assert.equal(multi.reward, 0.25);
    assert.deepEqual(multi.sub_rewards, { city: 0, shape: 1 });
    assert.deepEqual(multi.metadata.scores, { city: 0, shape: 1 });
  });

  it("refusals come back in OpenAI's shape, naming the field", async () => {
    const validate = (grader: AnyGrader) => client.fineTuning.alpha.graders.validate({ grader });
    const bad = { status: 400, code: "invalid_grader" };
    await refused(validate({ ...exact, operation: "regex" }), {
      ...bad,
      param: "grader.operation",
      message: /must be one of "eq", "ne"/,
    });
    await refused(validate({ ...exact, extra: true }), {
      ...bad,
      param: "grader.extra",
      message: /not a known field/,
    });
    await refused(validate({ ...exact, reference: "{{ answer }}" }), {
      ...bad,
      param: "grader.reference",
      message: /the only namespaces/,
    });
    await refused(validate({ type: "python", name: "p", source: "def grade(s, i): return 1" }), {
      ...bad,
      param: "grader.type",
      message: /does not run Python graders/,
    });
    await refused(
      validate({ type: "text_similarity", name: "t", evaluation_metric: "cosine", input: "", reference: "" }),
      {
        ...bad,
        param: "grader.evaluation_metric",
        message: /"cosine" is not served/,
      },
    );
    await refused(
      validate({ type: "multi", name: "m", graders: { city: exact }, calculate_output: "city + town" }),
      {
        ...bad,
        param: "grader.calculate_output",
        message: /names "town", which is no grader/,
      },
    );

    const run = (grader: AnyGrader, model_sample: string, item: unknown) =>
      client.fineTuning.alpha.graders.run({ grader, model_sample, item });
    await refused(run(exact, '{"city": "Paris"}', { reference: "Paris" }), {
      status: 400,
      code: "invalid_variable",
      param: "item",
      message: /names item\.answer, which the item does not have/,
    });
    await refused(
      run(
        { type: "multi", name: "m", graders: { city: exact }, calculate_output: "1 / city" },
        '{"city": "Rome"}',
        { answer: "Paris" },
      ),
      {
        status: 400,
        code: "invalid_reward",
        param: "grader.calculate_output",
        message: /gives Infinity for city = 0/,
      },
    );
    await refused(client.fineTuning.alpha.graders.run({ grader: exact, item: {} } as AnyGrader), {
      status: 400,
      code: "invalid_request",
      param: "model_sample",
      message: /is required/,
    });
  });

  it("score_model: the judge is a model this server serves, answering {result} as chat completions would", async (t) => {
    const messages = [
      { role: "system" as const, content: 'Score the answer from 0 to 1 as {"result": <score>}.' },
      { role: "user" as const, content: "Question: capital of France? Answer: Paris" },
    ];
    const judge: AnyGrader = {
      type: "score_model",
      name: "judge",
      model: TINY_MODEL,
      input: [
        messages[0],
        { role: "user", content: "Question: {{item.question}} Answer: {{sample.output_text}}" },
      ],
      range: [-1e308, 1e308],
      sampling_params: { temperature: 0, max_completions_tokens: 24 },
    };
    assert.deepEqual(await client.fineTuning.alpha.graders.validate({ grader: judge }), { grader: judge });
    // the same prompt through chat completions, under the same grammar: what the judge must have answered
    const chat = await client.chat.completions.create({
      model: TINY_MODEL,
      messages,
      temperature: 0,
      max_tokens: 24,
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "judge",
          strict: true,
          schema: {
            type: "object",
            properties: { result: { type: "number" } },
            required: ["result"],
            additionalProperties: false,
          },
        },
      },
    });
    const text = chat.choices[0].message.content ?? "";
    t.diagnostic(`the judge answers ${text}`);
    let expected: number | null = null;
    try {
      expected = JSON.parse(text).result;
    } catch {}
    const run = client.fineTuning.alpha.graders.run({
      grader: judge,
      model_sample: "Paris",
      item: { question: "capital of France?" },
    });
    if (typeof expected === "number" && Number.isFinite(expected)) {
      const graded = await run;
      assert.equal(graded.reward, expected, text);
      assert.deepEqual(graded.metadata.scores, { judge: expected });
      if (expected < 0 || expected > 1)
        await refused(
          client.fineTuning.alpha.graders.run({
            grader: { ...judge, range: [0, 1] },
            model_sample: "Paris",
            item: { question: "capital of France?" },
          }),
          { status: 400, code: "invalid_reward", param: "grader.range", message: /outside "range" \[0, 1\]/ },
        );
    } else {
      // cut off by max_completions_tokens: no score, and the sample is not graded
      await refused(run, {
        status: 400,
        code: "invalid_reward",
        param: "grader.model",
        message: /the judge answered/,
      });
    }
    await refused(client.fineTuning.alpha.graders.validate({ grader: { ...judge, model: "svc/unknown" } }), {
      status: 400,
      code: "unknown_base_model",
      param: "grader.model",
      message: /svc\/unknown/,
    });
    await refused(
      client.fineTuning.alpha.graders.validate({
        grader: { ...judge, model: "ft:test/tiny:org:x:ftjob-nope" },
      }),
      {
        status: 400,
        code: "invalid_grader",
        param: "grader.model",
        message: /ft:test\/tiny/,
      },
    );
  });

  it("a grader needs credentials like every route of the API", async () => {
    const reply = await call(server.apiUrl, "POST", "/v1/fine_tuning/alpha/graders/validate", {
      json: { grader: exact },
    });
    assert.equal(reply.status, 401);
    assert.equal(reply.body.error.type, "invalid_request_error");
  });
});
