import assert from "node:assert/strict";
import { test } from "node:test";
import { intOption, oneOf, parse, requirePositional, UsageError } from "./args.js";

test("parse returns flags and positionals", () => {
  const p = parse(["show", "abc", "--json"], { json: { type: "boolean" } }, 2);
  assert.deepEqual(p.positionals, ["show", "abc"]);
  assert.equal(p.values.json, true);
});

test("parse turns unknown flags and extra positionals into UsageError", () => {
  assert.throws(
    () => parse(["--nope"], {}),
    (e: Error) => e instanceof UsageError && /--nope/.test(e.message),
  );
  assert.throws(
    () => parse(["a", "b"], {}, 1),
    (e: Error) => e instanceof UsageError && /"b"/.test(e.message),
  );
  assert.throws(() => parse(["--slug"], { slug: { type: "string" } }), UsageError);
});

test("intOption checks range and names the flag", () => {
  const p = parse(["--port", "4000", "--step", "x"], { port: { type: "string" }, step: { type: "string" } });
  assert.equal(intOption(p.values, "port", 1, 65535), 4000);
  assert.throws(() => intOption(p.values, "step"), /--step: expected an integer/);
  assert.equal(intOption(p.values, "missing"), undefined);
});

test("oneOf and requirePositional", () => {
  assert.equal(oneOf("none", "auth", ["fixed_api_key", "none"]), "none");
  assert.throws(
    () => oneOf("open", "auth", ["fixed_api_key", "none"]),
    /--auth: expected one of fixed_api_key, none/,
  );
  assert.throws(() => requirePositional([], 0, "job id"), /missing job id/);
});
