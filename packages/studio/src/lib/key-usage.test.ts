// The usage cells of Studio's API keys table.
import assert from "node:assert/strict";
import { test } from "node:test";
import { keyUsageCells, keyUsageWindow } from "./key-usage.js";

test("key usage: counts grouped by thousands, a tooltip with the window and total tokens", () => {
  assert.deepEqual(
    keyUsageCells({ days: 30, requests: 1234, promptTokens: 1_500_000, completionTokens: 20 }),
    {
      requests: "1,234",
      promptTokens: "1,500,000",
      completionTokens: "20",
      title: "last 30 days (UTC, today included): 1,234 requests, 1,500,020 tokens",
    },
  );
  assert.deepEqual(
    keyUsageCells({ days: 30, requests: 0, promptTokens: 0, completionTokens: 0 }).requests,
    "0",
  );
  assert.equal(keyUsageWindow(30), "last 30 days");
});
