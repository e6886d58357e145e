// OutputGrammar (what a request asks for) → the grammar graph the matcher runs.
import { EngineError } from "../errors.js";
import type { OutputGrammar } from "./grammar.js";
import { advanceBytes, initialState } from "./matcher.js";
import { alt, computeMinLengths, type GNode, lazy, lit, rep, seq } from "./nodes.js";
import { anyJson, compileSchemaSteps } from "./schema.js";
import { finish, type Steps } from "./steps.js";

function invalid(path: string, message: string): never {
  throw new EngineError("invalid_argument", `grammar${path}: ${message}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function* compileNode(grammar: OutputGrammar, path: string, top: boolean): Steps<GNode> {
  yield;
  if (!isRecord(grammar)) invalid(path, "must be an object with a kind");
  switch (grammar.kind) {
    case "literal":
      if (typeof grammar.text !== "string") invalid(`${path}.text`, "must be a string");
      return lit(grammar.text);
    case "json":
      if (grammar.schema === null) return anyJson().object;
      return yield* compileSchemaSteps(grammar.schema);
    case "sequence":
      if (!Array.isArray(grammar.items)) invalid(`${path}.items`, "must be an array");
      return seq(
        yield* compileEach(grammar.items, (item, i) => compileNode(item, `${path}.items[${i}]`, false)),
      );
    case "choice":
      if (!Array.isArray(grammar.options) || grammar.options.length === 0) {
        invalid(`${path}.options`, "must be a non-empty array");
      }
      return alt(
        yield* compileEach(grammar.options, (option, i) =>
          compileNode(option, `${path}.options[${i}]`, false),
        ),
      );
    case "repeat": {
      const { min, max } = grammar;
      if (!Number.isSafeInteger(min) || min < 0) invalid(`${path}.min`, "must be an integer >= 0");
      if (max !== undefined && (!Number.isSafeInteger(max) || max < Math.max(1, min))) {
        invalid(`${path}.max`, "must be an integer >= min and >= 1");
      }
      const item = yield* compileNode(grammar.item, `${path}.item`, false);
      const sep =
        grammar.separator === undefined
          ? null
          : yield* compileNode(grammar.separator, `${path}.separator`, false);
      return rep(item, sep, min, max ?? Number.POSITIVE_INFINITY);
    }
    case "lazy": {
      if (!top) invalid(path, "a lazy grammar is only allowed as the whole grammar");
      if (typeof grammar.trigger !== "string" || grammar.trigger.length === 0) {
        invalid(`${path}.trigger`, "must be a non-empty string");
      }
      return lazy(grammar.trigger, yield* compileNode(grammar.then, `${path}.then`, false));
    }
    default:
      return invalid(
        `${path}.kind`,
        `unknown kind ${JSON.stringify((grammar as { kind: unknown }).kind)} (kinds: literal, json, sequence, choice, repeat, lazy)`,
      );
  }
}

function* compileEach<T>(items: T[], compile: (item: T, i: number) => Steps<GNode>): Steps<GNode[]> {
  const out: GNode[] = [];
  for (const [i, item] of items.entries()) out.push(yield* compile(item, i));
  return out;
}

/**
 * Compiles and checks a grammar a piece at a time (steps.ts): throws SchemaError for a schema outside the
 * subset, EngineError for a malformed grammar.
 */
export function* compileGrammarSteps(grammar: OutputGrammar): Steps<GNode> {
  const root = yield* compileNode(grammar, "", true);
  yield* computeMinLengths(root);
  yield* checkNode(root, new Set());
  if (!Number.isFinite(root.min)) invalid("", "admits no finite text");
  return root;
}

/** compileGrammarSteps at once. */
export function compileGrammar(grammar: OutputGrammar): GNode {
  return finish(compileGrammarSteps(grammar));
}

/** Repeats whose item can be empty would loop without consuming; a lazy grammar's `then` must accept its trigger. */
function* checkNode(node: GNode, seen: Set<GNode>): Steps<void> {
  if (seen.has(node)) return;
  seen.add(node);
  if (seen.size % 256 === 0) yield;
  switch (node.kind) {
    case "rep":
      if (
        node.item.min === 0 &&
        (node.sep === null || node.sep.min === 0) &&
        node.maxCount === Number.POSITIVE_INFINITY
      ) {
        invalid("", "a repeat without max needs an item or separator that is never empty");
      }
      yield* checkNode(node.item, seen);
      if (node.sep) yield* checkNode(node.sep, seen);
      return;
    case "seq":
      for (const item of node.items) yield* checkNode(item, seen);
      return;
    case "alt":
      for (const option of node.options) yield* checkNode(option, seen);
      return;
    case "obj":
      for (const prop of node.props) yield* checkNode(prop.first, seen);
      return;
    case "lazy":
      if (advanceBytes(initialState(node.then), node.trigger).length === 0) {
        invalid(
          ".then",
          `must start with the trigger ${JSON.stringify(new TextDecoder().decode(node.trigger))}`,
        );
      }
      yield* checkNode(node.then, seen);
      return;
    default:
      return;
  }
}
