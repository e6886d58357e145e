import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../http/api-error.js";
import { GradeError, SampleParseError } from "./grade-errors.js";
import { parseTemplate, render, sampleOf } from "./templates.js";

const item = { answer: "Paris", n: 3, list: [{ city: "Rome" }], "odd key": true, nil: null };

test("item and sample variables are filled as OpenAI documents them", () => {
  const ctx = { item, sample: sampleOf('{"city": "Oslo", "ok": [1, 2]}') };
  const fill = (source: string) => render(parseTemplate(source, "grader.input"), ctx);
  assert.equal(fill("A: {{ item.answer }}, n={{item.n}}"), "A: Paris, n=3");
  assert.equal(fill('{{item.list[0].city}} {{item["odd key"]}} {{item.nil}}'), "Rome true null");
  assert.equal(fill("{{sample.output_json.city}} {{ sample.output_json.ok[1] }}"), "Oslo 2");
  assert.equal(fill("{{sample.output_json}}"), '{"city":"Oslo","ok":[1,2]}');
  assert.equal(fill("{{item.list}}"), '[{"city":"Rome"}]');
  assert.equal(fill("no placeholders"), "no placeholders");
  assert.equal(
    render(parseTemplate("{{sample.output_text}}!", "x"), { item, sample: sampleOf("hi") }),
    "hi!",
  );
  const choice = parseTemplate("{{sample.choices[0].message.content}} {{sample.output_tools}}", "x");
  assert.equal(render(choice, { item, sample: sampleOf("hi") }), "hi []");
});

test("malformed placeholders, other namespaces and unknown sample variables are refused when validated", () => {
  const refused = (source: string, message: RegExp) =>
    assert.throws(
      () => parseTemplate(source, "grader.reference"),
      (e) => e instanceof ApiError && e.message.startsWith('"grader.reference"') && message.test(e.message),
    );
  refused("{{ answer }}", /the only namespaces/);
  refused("{{ items.answer }}", /the only namespaces/);
  refused("{{ item }}", /name a field of the item/);
  refused("{{ sample.output }}", /the sample's variables are output_text, output_json/);
  refused("{{ item.a b }}", /cannot read " b"/);
  refused("{{ item.a[x] }}", /cannot read/);
});

test("a field the item lacks fails the sample; a completion that is not the JSON a template reads is its own failure", () => {
  const t = parseTemplate("{{item.list[1].city}}", "grader.reference");
  assert.throws(
    () => render(t, { item, sample: sampleOf("x") }),
    (e) =>
      e instanceof GradeError &&
      e.code === "invalid_variable" &&
      e.param === "item" &&
      /names item\.list\[1\], which the item does not have/.test(e.message),
  );
  const json = parseTemplate("{{sample.output_json.city}}", "grader.input");
  assert.throws(() => render(json, { item, sample: sampleOf("not json") }), /it is not JSON/);
  assert.throws(
    () => render(json, { item, sample: sampleOf('{"town": 1}') }),
    (e) => e instanceof SampleParseError && /has no sample\.output_json\.city/.test(e.message),
  );
});
