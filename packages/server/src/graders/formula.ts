// A multi grader's `calculate_output`: a formula over its sub-graders' scores,
// parsed here by a small recursive-descent parser into a tree and evaluated
// over numbers only, never with eval. It has what OpenAI documents: numbers,
// the sub-graders' names, + - * / ^ (power, right-associative, above unary
// minus: -2^2 is -4), parentheses, and the functions min and max (one or more
// arguments), abs, floor, ceil, exp, sqrt and log (natural; one argument).
// A name that is no sub-grader, an unknown function or a wrong argument count
// is refused when the grader is validated; a value that is not finite
// (a division by zero, log of 0, sqrt of a negative) fails the sample.
import { badRequest, quoteInput } from "../http/api-error.js";
import { GradeError } from "./grade-errors.js";

type Node =
  | { kind: "num"; value: number }
  | { kind: "var"; name: string }
  | { kind: "neg"; arg: Node }
  | { kind: "bin"; op: "+" | "-" | "*" | "/" | "^"; left: Node; right: Node }
  | { kind: "call"; fn: string; args: Node[] };

export interface Formula {
  source: string;
  root: Node;
  /** Where it sits in the grader, for errors. */
  path: string;
}

const UNARY: Record<string, (x: number) => number> = {
  abs: Math.abs,
  floor: Math.floor,
  ceil: Math.ceil,
  exp: Math.exp,
  sqrt: Math.sqrt,
  log: Math.log,
};
const VARIADIC: Record<string, (...xs: number[]) => number> = { min: Math.min, max: Math.max };
export const FORMULA_FUNCTIONS = [...Object.keys(VARIADIC), ...Object.keys(UNARY)];

/** Deepest nesting a formula may have: the parser recurses once per level. */
const MAX_DEPTH = 64;

const TOKEN =
  /(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/^(),]))/y;

type Token = { kind: "num"; value: number } | { kind: "name"; text: string } | { kind: "op"; text: string };

function tokenize(source: string, fail: (what: string) => never): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  for (;;) {
    while (at < source.length && /\s/.test(source[at])) at++;
    if (at === source.length) return tokens;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(source);
    if (!m) return fail(`cannot read ${JSON.stringify(source[at])} at character ${at + 1}`);
    at = TOKEN.lastIndex;
    if (m[1] !== undefined) tokens.push({ kind: "num", value: Number(m[1]) });
    else if (m[2] !== undefined) tokens.push({ kind: "name", text: m[2] });
    else tokens.push({ kind: "op", text: m[3] });
  }
}

/** The formula, checked against the sub-graders it may name; `path` names the field for errors. */
export function parseFormula(source: string, names: ReadonlySet<string>, path: string): Formula {
  const fail = (what: string): never => {
    throw badRequest(`${quoteInput(path)} ${what}`, "invalid_grader");
  };
  const tokens = tokenize(source, fail);
  let i = 0;
  const peek = () => tokens[i];
  const isOp = (text: string) => peek()?.kind === "op" && (peek() as { text: string }).text === text;
  const expect = (text: string) => {
    if (!isOp(text))
      fail(`expects ${JSON.stringify(text)} ${peek() ? "before the formula goes on" : "at its end"}`);
    i++;
  };
  const deeper = (depth: number) => {
    if (depth > MAX_DEPTH) fail(`nests deeper than ${MAX_DEPTH} levels`);
    return depth + 1;
  };

  const expr = (depth: number): Node => {
    let left = term(deeper(depth));
    while (isOp("+") || isOp("-")) {
      const op = (tokens[i++] as { text: "+" | "-" }).text;
      left = { kind: "bin", op, left, right: term(deeper(depth)) };
    }
    return left;
  };
  const term = (depth: number): Node => {
    let left = unary(depth);
    while (isOp("*") || isOp("/")) {
      const op = (tokens[i++] as { text: "*" | "/" }).text;
      left = { kind: "bin", op, left, right: unary(depth) };
    }
    return left;
  };
  const unary = (depth: number): Node => {
    if (isOp("-")) {
      i++;
      return { kind: "neg", arg: unary(deeper(depth)) };
    }
    if (isOp("+")) {
      i++;
      return unary(deeper(depth));
    }
    const base = primary(depth);
    if (!isOp("^")) return base;
    i++;
    return { kind: "bin", op: "^", left: base, right: unary(deeper(depth)) };
  };
  const primary = (depth: number): Node => {
    const token = peek();
    if (!token) return fail("ends where a number, a grader name or ( is expected");
    i++;
    if (token.kind === "num") return { kind: "num", value: token.value };
    if (token.kind === "op") {
      if (token.text !== "(") return fail(`has ${JSON.stringify(token.text)} where a value is expected`);
      const inner = expr(deeper(depth));
      expect(")");
      return inner;
    }
    if (isOp("(")) {
      i++;
      const fn = token.text;
      if (!Object.hasOwn(UNARY, fn) && !Object.hasOwn(VARIADIC, fn))
        fail(`calls ${fn}(), which is not one of ${FORMULA_FUNCTIONS.join(", ")}`);
      const args: Node[] = [];
      if (!isOp(")")) {
        args.push(expr(deeper(depth)));
        while (isOp(",")) {
          i++;
          args.push(expr(deeper(depth)));
        }
      }
      expect(")");
      if (Object.hasOwn(UNARY, fn) && args.length !== 1)
        fail(`calls ${fn}() with ${args.length} arguments; it takes one`);
      if (args.length === 0) fail(`calls ${fn}() with no arguments`);
      return { kind: "call", fn, args };
    }
    if (!names.has(token.text))
      fail(`names ${JSON.stringify(token.text)}, which is no grader of "graders" (${[...names].join(", ")})`);
    return { kind: "var", name: token.text };
  };

  const root = expr(0);
  if (i < tokens.length) {
    const t = tokens[i];
    fail(`has ${JSON.stringify(t.kind === "num" ? String(t.value) : t.text)} after a complete formula`);
  }
  return { source, root, path };
}

function value(node: Node, scores: Readonly<Record<string, number>>): number {
  switch (node.kind) {
    case "num":
      return node.value;
    case "var":
      return scores[node.name];
    case "neg":
      return -value(node.arg, scores);
    case "call": {
      const args = node.args.map((a) => value(a, scores));
      return Object.hasOwn(UNARY, node.fn) ? UNARY[node.fn](args[0]) : VARIADIC[node.fn](...args);
    }
    case "bin": {
      const a = value(node.left, scores);
      const b = value(node.right, scores);
      switch (node.op) {
        case "+":
          return a + b;
        case "-":
          return a - b;
        case "*":
          return a * b;
        case "/":
          return a / b;
        case "^":
          return a ** b;
      }
    }
  }
}

/** The formula's value for these sub-grader scores; a value that is not finite fails the sample. */
export function evaluateFormula(formula: Formula, scores: Readonly<Record<string, number>>): number {
  const result = value(formula.root, scores);
  if (!Number.isFinite(result)) {
    const shown = Object.entries(scores)
      .map(([k, v]) => `${k} = ${v}`)
      .join(", ");
    throw new GradeError(
      "invalid_reward",
      formula.path,
      `${quoteInput(formula.path)} ${JSON.stringify(formula.source)} gives ${result} for ${shown}: a reward must be a finite number`,
    );
  }
  return result;
}
