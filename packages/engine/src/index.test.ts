import assert from "node:assert/strict";
import { test } from "node:test";
import { ENGINE_VERSION } from "./index.js";

test("engine exports its version", () => {
  assert.match(ENGINE_VERSION, /^\d+\.\d+\.\d+$/);
});
