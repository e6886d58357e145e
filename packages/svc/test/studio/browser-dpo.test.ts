// Studio's job detail for a DPO job, in Chromium against a real `svc dev` and
// `svc server`: the Metadata names the job's method (docs/post-training.md),
// and the job's loss chart draws its steps like an SFT job's.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER } from "./browser.js";

const PAIRS = Array.from({ length: 12 }, (_, i) =>
  JSON.stringify({ prompt: `Say ${i}.`, chosen: `${i}`, rejected: `no ${i}` }),
).join("\n");

describe("Studio shows a DPO job's method", { skip: chromiumMissing, timeout: 300_000 }, () => {
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-dpo-home",
    project: { source: TEST_MODEL_TRAINER.replace("seed: 1,", 'seed: 1,\n  method: "dpo",'), rows: PAIRS },
    async beforeStudio(s) {
      jobId = await s.finishJob();
    },
  });

  test("the job page says DPO (preference pairs) and charts its loss", async () => {
    const page = await session.open(`jobs/${jobId}`);
    await page.getByText("completed").first().waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId("method").textContent(), "DPO (preference pairs)");
    await maybeScreenshot(page, "dpo-job");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
