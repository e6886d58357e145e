// The Playground and the endpoint flow in Chromium against a real `svc dev`
// and a real `svc server` (tiny random model): a streamed reply from a
// finished job's final adapter, one of its checkpoints and the base model;
// then endpoints: create, 409 and reserved-slug errors, detail, a Quick start
// that works when run, key issue and revoke, settings. Both use the job that
// `svc start` trains before Studio opens.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { TEST_MODEL, tempDir } from "../cli/harness.js";
import {
  chromiumMissing,
  maybeScreenshot,
  studioInBrowser,
  TEST_MODEL_TRAINER,
  until as waitUntil,
} from "./browser.js";

/** Waits up to 120 s by default: replies and Quick start runs on a busy machine. */
const until = <T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 120_000) =>
  waitUntil(what, probe, timeoutMs);

describe("Studio in a browser: Playground and endpoints", { skip: chromiumMissing, timeout: 600_000 }, () => {
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-endpoints-home",
    project: { source: TEST_MODEL_TRAINER },
    async beforeStudio(s) {
      jobId = await s.finishJob();
    },
  });

  test("Playground: a streamed reply from the job's final adapter and from the base model", async () => {
    const { page } = session.browser;
    await page.goto(`http://localhost:${session.studio.port}/#/playground`);
    const model = page.getByTestId("pg-model");
    await until("model options", async () => (await model.locator("option").count()) >= 2);
    await model.selectOption(`job:${jobId}`);
    await page
      .getByTestId("pg-checkpoint")
      .locator("option", { hasText: "Checkpoint step" })
      .first()
      .waitFor({ state: "attached" });
    await page.getByTestId("pg-input").fill("What is 2 plus 2?");
    await page.getByTestId("pg-send").click();
    const reply = page.locator(".bubble-assistant").last();
    await until(
      "a reply",
      async () =>
        ((await reply.textContent()) ?? "").replace("●●●", "").length > 0 &&
        (await page.getByTestId("pg-send").count()) === 1,
    );
    // A checkpoint adapter, picked in the checkpoint picker, with custom sampling settings.
    const sent: unknown[] = [];
    const onChat = (r: { url(): string; postDataJSON(): unknown }) => {
      if (r.url().endsWith("/api/inference/chat")) sent.push(r.postDataJSON());
    };
    page.on("request", onChat);
    await page.getByTestId("pg-checkpoint").selectOption("6");
    await page.getByLabel("Max tokens").fill("5");
    await page.getByTestId("pg-input").fill("And 3 plus 3?");
    // The reply is sampled from a 6-step checkpoint of a random model: it may close its turn
    // at once (empty text, and the Playground then shows no bubble), so wait for the answer itself.
    const answered = page.waitForResponse((r) => r.url().endsWith("/api/inference/chat"));
    await page.getByTestId("pg-send").click();
    const response = await answered;
    assert.equal(response.status(), 200, await response.text());
    await response.finished();
    await until(
      "the checkpoint reply to finish",
      async () => (await page.getByTestId("pg-send").count()) === 1,
    );
    page.off("request", onChat);
    const chat = sent[0] as { adapter: unknown; maxTokens: number; temperature: number; topP: number };
    assert.deepEqual(chat.adapter, { kind: "checkpoint", jobId: jobId, step: 6 });
    assert.equal(chat.maxTokens, 5);
    assert.equal(typeof chat.temperature, "number");
    assert.equal(typeof chat.topP, "number");
    await page.getByRole("button", { name: "Clear chat" }).click();

    await model.selectOption(`base:${TEST_MODEL}`);
    await page.getByTestId("pg-input").fill("hello");
    await page.getByTestId("pg-send").click();
    await until(
      "a second reply",
      async () =>
        (await page.locator(".bubble-assistant").count()) === 1 &&
        (await page.getByTestId("pg-send").count()) === 1,
    );
    assert.ok(((await page.locator(".bubble-assistant").last().textContent()) ?? "").length > 0);
    await maybeScreenshot(page, "playground");
  });

  test("Endpoints: create, 409 and reserved-slug errors in red, detail, Quick start, keys, settings", async () => {
    const { page } = session.browser;
    await page.goto(`http://localhost:${session.studio.port}/#/endpoints`);
    const create = async (slug: string) => {
      if (!(await page.getByTestId("create-form").isVisible()))
        await page.getByTestId("new-endpoint").click();
      await page.getByTestId("create-slug").fill(slug);
      await page.getByTestId("target-kind").selectOption("final");
      await page.getByTestId("target-job").fill(jobId);
      await page.getByTestId("create-submit").click();
    };
    await create("support-e2e");
    await page.getByTestId("create-form").waitFor({ state: "detached" });
    const row = page.locator('.endpoint-row[data-slug="support-e2e"]');
    await row.waitFor();
    const rowText = (await row.textContent()) ?? "";
    assert.ok(rowText.includes(`support-e2e.${session.server.deploymentDomain}`), rowText);
    assert.ok(rowText.includes(`Final adapter (job ${jobId.slice(0, 8)})`), rowText);
    assert.ok(rowText.includes("fixed_api_key") && rowText.includes("enabled"), rowText);

    await create("support-e2e");
    const error = page.locator("[data-testid=create-form] .error-text");
    await error.waitFor();
    assert.match((await error.textContent()) ?? "", /support-e2e/);
    const color = await error.evaluate(
      (e) =>
        (globalThis as unknown as { getComputedStyle(el: unknown): { color: string } }).getComputedStyle(e)
          .color,
    );
    assert.equal(color, "rgb(220, 38, 38)", "the upstream message is red");
    assert.equal(await page.getByTestId("create-form").isVisible(), true, "form stays open on 409");
    await create("admin");
    await until("the reserved-slug message", async () =>
      /admin|reserved/i.test((await error.textContent()) ?? ""),
    );
    await maybeScreenshot(page, "endpoints");

    await row.click();
    const url = page.getByTestId("endpoint-url");
    await url.waitFor();
    assert.equal(
      await url.textContent(),
      `http://support-e2e.${session.server.deploymentDomain}/v1/chat/completions`,
    );
    const code = page.getByTestId("qs-code");
    await page.getByTestId("api-keys").locator(".muted, table").first().waitFor();
    // The Quick start is built in the page: switching languages or hiding it calls nothing.
    const quickstartCalls: string[] = [];
    // The API banner's connection poll (every 3 s) is not the Quick start's doing.
    const onQuickstartRequest = (r: { url(): string }) => {
      if (!r.url().endsWith("/api/connection")) quickstartCalls.push(r.url());
    };
    page.on("request", onQuickstartRequest);
    assert.match((await code.textContent()) ?? "", /-H "Authorization: Bearer YOUR_API_KEY"/);
    await page.getByRole("tab", { name: "Python client" }).click();
    assert.match((await code.textContent()) ?? "", /api_key="YOUR_API_KEY"/);
    await page.getByRole("tab", { name: "JavaScript client" }).click();
    const jsSample = (await code.textContent()) ?? "";
    assert.match(jsSample, /apiKey: "YOUR_API_KEY"/);
    assert.match(jsSample, /baseURL: "http:\/\/127\.0\.0\.1:\d+\/d\/support-e2e\/v1"/);
    await page.getByTestId("qs-hide").click();
    assert.equal(await code.count(), 0, "Hide hides the sample");
    await page.getByTestId("qs-hide").click();
    page.off("request", onQuickstartRequest);
    assert.deepEqual(quickstartCalls, []);

    // Issue a key: asked for a label, plaintext shown once.
    await page.getByTestId("issue-key").click();
    await page.getByTestId("key-label").fill("ci key");
    await page.getByTestId("key-issue-submit").click();
    const plaintext = (await page.getByTestId("issued-plaintext").textContent()) ?? "";
    assert.ok(plaintext.length > 20);
    const keyRow = page.locator('[data-key-label="ci key"]');
    await keyRow.waitFor();
    assert.ok(plaintext.startsWith(((await keyRow.locator("td.mono").textContent()) ?? "").replace("…", "")));
    await maybeScreenshot(page, "endpoint-detail");

    // Editing the target (cloud API PATCH with target).
    await page.getByRole("button", { name: "Edit target" }).click();
    await page.locator("[data-testid=settings] [data-testid=target-kind]").selectOption("checkpoint");
    await page.locator("[data-testid=settings] [data-testid=target-step]").fill("6");
    await page.getByRole("button", { name: "Save target" }).click();
    await page
      .getByText(`Checkpoint step 6 (job ${jobId.slice(0, 8)})`)
      .first()
      .waitFor();

    // The JavaScript Quick start, run as written with the issued key, answers on stock Linux.
    const answer = await runJsSample(jsSample.replace("YOUR_API_KEY", plaintext));
    assert.equal(answer.status, 0, answer.output);
    // And the cURL sample.
    await page.getByRole("tab", { name: "cURL" }).click();
    const curl = ((await code.textContent()) ?? "").replace("YOUR_API_KEY", plaintext);
    const curlRun = spawnSync("sh", ["-c", `${curl} --silent --show-error --fail-with-body`], {
      encoding: "utf8",
    });
    assert.equal(curlRun.status, 0, curlRun.stderr + curlRun.stdout);
    assert.ok(JSON.parse(curlRun.stdout).choices[0].message, curlRun.stdout);

    // The keys table counts the two requests above (usage is written about once a second; a reload reads it again).
    await until("the key's requests in the keys table", async () => {
      await page.reload();
      await keyRow.waitFor();
      return (await keyRow.getByTestId("key-requests").textContent()) === "2";
    });
    assert.match((await keyRow.getByTestId("key-prompt-tokens").textContent()) ?? "", /^[1-9][\d,]*$/);
    assert.match((await keyRow.getByTestId("key-completion-tokens").textContent()) ?? "", /^\d[\d,]*$/);

    // The Responses API operation: its JavaScript and cURL samples answer as written too.
    const operation = page.locator("[data-testid=quickstart] select");
    await operation.selectOption("responses");
    await page.getByRole("tab", { name: "JavaScript client" }).click();
    const jsResponses = (await code.textContent()) ?? "";
    assert.match(jsResponses, /client\.responses\.create/);
    const responsesAnswer = await runJsSample(jsResponses.replace("YOUR_API_KEY", plaintext));
    assert.equal(responsesAnswer.status, 0, responsesAnswer.output);
    await page.getByRole("tab", { name: "cURL" }).click();
    const curlResponses = ((await code.textContent()) ?? "").replace("YOUR_API_KEY", plaintext);
    assert.match(curlResponses, /\/v1\/responses \\/);
    const responsesRun = spawnSync("sh", ["-c", `${curlResponses} --silent --show-error --fail-with-body`], {
      encoding: "utf8",
    });
    assert.equal(responsesRun.status, 0, responsesRun.stderr + responsesRun.stdout);
    assert.equal(JSON.parse(responsesRun.stdout).object, "response", responsesRun.stdout);
    await operation.selectOption("chat.completions");

    // Revoke: struck through, and the edge refuses the key.
    await keyRow.getByRole("button", { name: "Revoke" }).click();
    await keyRow.locator("s").first().waitFor();
    const refused = spawnSync(
      "sh",
      ["-c", `${curl} --silent --output /dev/null --write-out '%{http_code}'`],
      { encoding: "utf8" },
    );
    assert.equal(refused.stdout, "401");

    // Settings: public mode drops the header; Disable makes the edge answer 404.
    await page.getByTestId("auth-mode").selectOption("none");
    await until("a public sample", async () => !((await code.textContent()) ?? "").includes("Authorization"));
    const open = spawnSync(
      "sh",
      ["-c", `${(await code.textContent()) ?? ""} --silent --output /dev/null --write-out '%{http_code}'`],
      { encoding: "utf8" },
    );
    assert.equal(open.stdout, "200");
    await page.getByTestId("toggle-enabled").click();
    await until(
      "disabled",
      async () => (await page.getByTestId("toggle-enabled").textContent()) === "Enable",
    );
    const disabled = spawnSync(
      "sh",
      ["-c", `${(await code.textContent()) ?? ""} --silent --output /dev/null --write-out '%{http_code}'`],
      { encoding: "utf8" },
    );
    assert.equal(disabled.stdout, "404");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});

/** Runs a JavaScript Quick start sample with Node, resolving "openai" to this repository's copy. */
async function runJsSample(sample: string): Promise<{ status: number | null; output: string }> {
  const openai = pathToFileURL(createRequire(import.meta.url).resolve("openai")).href;
  const dir = await tempDir("quickstart");
  const file = join(dir, "sample.mjs");
  await writeFile(file, sample.replace('from "openai"', `from ${JSON.stringify(openai)}`));
  const r = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: r.stdout + r.stderr };
}
