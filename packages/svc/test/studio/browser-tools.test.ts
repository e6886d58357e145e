// The Playground's tools and JSON-schema mode in Chromium against a real
// `svc dev` and `svc server` (tiny random model): tool definitions typed in
// the JSON editor with tool choice "required" give a call shown in the
// transcript, the composer then sends the tool's result, and the JSON schema
// output mode gives an answer that parses and matches the schema.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LOOKUP_ORDER_TOOL, TEST_MODEL } from "../cli/harness.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER, until } from "./browser.js";

const TOOLS = JSON.stringify([LOOKUP_ORDER_TOOL]);

describe("Studio Playground: tools and JSON schema output", {
  skip: chromiumMissing,
  timeout: 300_000,
}, () => {
  const session = studioInBrowser({
    homePrefix: "studio-tools-home",
    project: { source: TEST_MODEL_TRAINER },
  });

  test("a tool call is shown, the next message is its result; the JSON schema mode answers valid JSON", async () => {
    const page = await session.open("playground");
    const model = page.getByTestId("pg-model");
    await until("model options", async () => (await model.locator("option").count()) >= 1);
    await model.selectOption(`base:${TEST_MODEL}`);
    await page.getByLabel("Max tokens").fill("200");

    // A malformed definition is named before anything is sent.
    await page.getByTestId("pg-tools").fill("[{");
    await page.getByTestId("pg-input").fill("Where is A1?");
    await page.getByTestId("pg-send").click();
    await page.getByText(/Tools: not valid JSON/).waitFor();

    await page.getByTestId("pg-tools").fill(TOOLS);
    await page.getByTestId("pg-tool-choice").selectOption("required");
    await page.getByTestId("pg-send").click();
    const calls = page.getByTestId("tool-calls");
    await calls.waitFor();
    // (Parallel calls are allowed: the random model may make more than one.)
    const shown = (await calls.locator("li").first().textContent()) ?? "";
    const match = /^lookup_order\((.*)\)$/.exec(shown.trim());
    assert.ok(match, shown);
    assert.ok(["A1", "B2"].includes(JSON.parse(match[1]).order_id));

    const input = page.getByTestId("pg-input");
    assert.match((await input.getAttribute("placeholder")) ?? "", /^Result of lookup_order/);
    await page.getByTestId("pg-tool-choice").selectOption("none");
    await input.fill('{"status": "shipped"}');
    await page.getByTestId("pg-send").click();
    await page.locator(".bubble-tool", { hasText: "shipped" }).waitFor();
    await until("the answer after the result", async () => (await page.getByTestId("pg-send").count()) === 1);
    await maybeScreenshot(page, "playground-tools");

    await page.getByRole("button", { name: "Clear chat" }).click();
    await page.getByTestId("pg-tools").fill("");
    await page.getByTestId("pg-format").selectOption("json_schema");
    await page.getByTestId("pg-schema").fill(
      JSON.stringify({
        type: "object",
        properties: { answer: { type: "string", enum: ["yes", "no"] }, count: { type: "integer" } },
        required: ["answer", "count"],
        additionalProperties: false,
      }),
    );
    await input.fill("Is it shipped?");
    await page.getByTestId("pg-send").click();
    const reply = page.locator(".bubble-assistant").last();
    // The Send button comes back when the stream has ended; only then is the text final.
    const text = await until("a JSON reply", async () => {
      if ((await page.getByTestId("pg-send").count()) !== 1) return null;
      const t = ((await reply.textContent()) ?? "").replace("●●●", "");
      return t.length > 0 ? t : null;
    });
    const value = JSON.parse(text);
    assert.ok(["yes", "no"].includes(value.answer), text);
    assert.ok(Number.isInteger(value.count), text);
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
