// Job detail's Export card in Chromium against a real `svc dev` and `svc
// server`: a finished job's adapter exported as GGUF q8_0, its files listed
// with their sizes, and each saved through the browser (the GGUF file starts
// with its magic, the Modelfile names it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { PROFILE_ROWS, PROFILE_TRAINER } from "../cli/profile-fixture.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser } from "./browser.js";

describe("Studio job detail: export", { skip: chromiumMissing, timeout: 300_000 }, () => {
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-export-home",
    project: { source: PROFILE_TRAINER, rows: PROFILE_ROWS },
    async beforeStudio(s) {
      jobId = await s.finishJob();
    },
  });

  test("exports the final adapter as GGUF q8_0 and saves its files", async () => {
    const page = await session.open(`jobs/${jobId}`);
    const card = page.getByTestId("export-card");
    await card.waitFor({ timeout: 60_000 });
    await card.getByLabel("Export format").selectOption("gguf");
    await card.getByLabel("Precision").selectOption("q8_0");
    await card.getByRole("button", { name: "Export" }).click();
    const files = card.getByTestId("export-files");
    await files.waitFor({ timeout: 120_000 });
    assert.match((await files.textContent()) ?? "", /model-q8_0\.gguf\s*\d+\.\d MiB.*Modelfile/s);
    const [gguf] = await Promise.all([
      page.waitForEvent("download"),
      files.getByRole("button", { name: "model-q8_0.gguf" }).click(),
    ]);
    assert.equal(gguf.suggestedFilename(), "model-q8_0.gguf");
    assert.equal((await readFile((await gguf.path()) as string)).subarray(0, 4).toString("ascii"), "GGUF");
    const [modelfile] = await Promise.all([
      page.waitForEvent("download"),
      files.getByRole("button", { name: "Modelfile" }).click(),
    ]);
    assert.match(await readFile((await modelfile.path()) as string, "utf8"), /^FROM \.\/model-q8_0\.gguf$/m);
    await maybeScreenshot(page, "job-detail-export");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
