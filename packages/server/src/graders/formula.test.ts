import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../http/api-error.js";
import { evaluateFormula, parseFormula } from "./formula.js";
import { GradeError } from "./grade-errors.js";

const names = new Set(["a", "b", "name_check"]);
const value = (source: string, scores: Record<string, number> = { a: 0.5, b: 2, name_check: 1 }) =>
  evaluateFormula(parseFormula(source, names, "grader.calculate_output"), scores);

test("operators, precedence, parentheses and the documented functions", () => {
  assert.equal(value("(a + b) / 2"), 1.25);
  assert.equal(value("a + b * 2"), 4.5);
  assert.equal(value("-b ^ 2"), -4); // power above unary minus
  assert.equal(value("2 ^ 3 ^ 2"), 512); // right-associative
  assert.equal(value("2 ^ -1"), 0.5);
  assert.equal(value("min(a, b, 0.1) + max(a)"), 0.6);
  assert.equal(value("abs(-3) + floor(2.7) + ceil(2.1) + sqrt(16)"), 12);
  assert.equal(value("log(exp(2))"), 2);
  assert.equal(value("0.7 * name_check + 0.3 * a"), 0.85);
  assert.equal(value("1e-1 + .5"), 0.6);
});

test("refused at validation, naming the field: unknown names and functions, bad arity, bad syntax", () => {
  const refused = (source: string, message: RegExp) =>
    assert.throws(
      () => parseFormula(source, names, "grader.calculate_output"),
      (e) =>
        e instanceof ApiError &&
        e.status === 400 &&
        e.message.startsWith('"grader.calculate_output"') &&
        message.test(e.message),
    );
  refused("a + c", /names "c", which is no grader/);
  refused("pow(a, 2)", /calls pow\(\)/);
  refused("abs(a, b)", /with 2 arguments; it takes one/);
  refused("max()", /no arguments/);
  refused("a +", /ends where/);
  refused("(a + b", /expects "\)"/);
  refused("a b", /after a complete formula/);
  refused("a; b", /cannot read ";" at character 2/);
  refused("constructor", /names "constructor"/);
  refused(`${"(".repeat(100)}a${")".repeat(100)}`, /nests deeper/);
});

test("a value that is not finite fails the sample instead of becoming a reward", () => {
  for (const [source, scores] of [
    ["a / b", { a: 1, b: 0, name_check: 0 }],
    ["log(a)", { a: 0, b: 0, name_check: 0 }],
    ["sqrt(a - 1)", { a: 0, b: 0, name_check: 0 }],
  ] as const)
    assert.throws(
      () => value(source, scores),
      (e) => e instanceof GradeError && e.code === "invalid_reward" && e.param === "grader.calculate_output",
    );
});
