// Studio's job detail for a DPO job, in Chromium against a real `svc dev` and
// `svc server`: the Metadata names the job's method (docs/post-training.md),
// and the task metrics chart draws the held-out preference accuracy at each eval.
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
    project: {
      // the training file doubles as the eval set: enough for the page's charts
      source: TEST_MODEL_TRAINER.replace(
        "seed: 1,",
        'seed: 1,\n  method: "dpo",\n  evalDataset: { type: "file", path: "data/train.jsonl" },',
      ),
      rows: PAIRS,
    },
    async beforeStudio(s) {
      jobId = await s.finishJob();
    },
  });

  test("the job page says DPO (preference pairs) and charts the eval preference accuracy", async () => {
    const page = await session.open(`jobs/${jobId}`);
    await page.getByText("completed").first().waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId("method").textContent(), "DPO (preference pairs)");
    await page.getByTestId("legend-preference-accuracy").waitFor({ timeout: 30_000 });
    // maxSteps 12, evalSteps 4: an eval at steps 4, 8 and 12
    assert.equal(await page.getByTestId("preference-accuracy-line").getAttribute("data-points"), "3");
    await maybeScreenshot(page, "dpo-job");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
