import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../http/api-error.js";
import { pageAfter } from "./openai-list.js";

const items = ["a", "b", "c", "d"].map((id) => ({ id }));

test("pages follow `after` to the end and say whether more follow", () => {
  assert.deepEqual(pageAfter(items, undefined, 3), { data: items.slice(0, 3), has_more: true });
  assert.deepEqual(pageAfter(items, "c", 3), { data: [{ id: "d" }], has_more: false });
  assert.deepEqual(pageAfter(items, "d", 3), { data: [], has_more: false });
  assert.deepEqual(pageAfter(items, "a", 3), { data: items.slice(1), has_more: false });
});

test("an `after` that is not in the list is a 400 naming it", () => {
  assert.throws(
    () => pageAfter(items, "zz", 2),
    (error: unknown) => error instanceof ApiError && error.status === 400 && /^"after"/.test(error.message),
  );
});
