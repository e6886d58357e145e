// Studio's job detail for a DPO job, in Chromium against a real `svc dev` and
// `svc server`: the Metadata names the job's method (docs/post-training.md),
// the task metrics chart draws the preference accuracy on each step's training
// pairs and the held-out one at each eval, and the rewards chart the chosen and
// rejected rewards and their margin, train (each step) and eval (each eval).
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

  test("the job page says DPO (preference pairs) and charts its preference accuracy and rewards", async () => {
    const page = await session.open(`jobs/${jobId}`);
    await page.getByText("completed").first().waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId("method").textContent(), "DPO (preference pairs)");
    await page.getByTestId("legend-preference-accuracy").waitFor({ timeout: 30_000 });
    // maxSteps 12, evalSteps 4: an eval at steps 4, 8 and 12
    assert.equal(await page.getByTestId("preference-accuracy-line").getAttribute("data-points"), "3");
    // a training.log each of the 12 steps, each with the step's rewards
    assert.equal(await page.getByTestId("train-preference-accuracy-line").getAttribute("data-points"), "12");
    await page.getByTestId("legend-train-preference-accuracy").waitFor();
    const points = async (testId: string) => page.getByTestId(testId).getAttribute("data-points");
    for (const series of ["chosen-reward", "rejected-reward", "reward-margin"]) {
      assert.equal(await points(`${series}-line`), "12", series);
      assert.equal(await points(`eval-${series}-line`), "3", `eval ${series}`);
      await page.getByTestId(`legend-eval-${series}`).waitFor();
    }
    // hovering reads the step's figures: an eval step has all six
    const chart = page.getByTestId("preference-rewards-chart");
    const box = await chart.boundingBox();
    assert.ok(box);
    await chart.hover({ position: { x: box.width - 2, y: box.height / 2 } });
    await page.getByTestId("preference-rewards-readout").getByText("step 12").waitFor({ timeout: 10_000 });
    const readout = await page.getByTestId("preference-rewards-readout").textContent();
    assert.match(readout ?? "", /step 12.*chosen reward [+-]?\d\.\d{3}.*eval reward margin [+-]?\d\.\d{3}/);
    await maybeScreenshot(page, "dpo-job");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
