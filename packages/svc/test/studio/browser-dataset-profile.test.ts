// Job detail's Dataset card in Chromium against a real `svc dev` and `svc server`:
// the histogram of the training dataset's row lengths for the job's model, the
// bars past maxLength, the maxLength line and the profile's figures. The test
// model's tokenizer has one token per byte and ChatML: a row with a user content
// of N bytes and an answer of M is 20 + N prompt and M + 1 answer tokens.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TEST_MODEL } from "../cli/harness.js";
import { PROFILE_ROWS, PROFILE_TRAINER } from "../cli/profile-fixture.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser } from "./browser.js";
import { studioFetch } from "./studio-process.js";

describe("Studio job detail: the dataset profile", { skip: chromiumMissing, timeout: 300_000 }, () => {
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-profile-home",
    project: { source: PROFILE_TRAINER, rows: PROFILE_ROWS },
    async beforeStudio(s) {
      jobId = await s.submitJob();
    },
  });

  test("a histogram of row lengths with the maxLength line, bars past it marked, and the figures", async () => {
    const page = await session.open(`jobs/${jobId}`);
    const card = page.locator('[data-testid="dataset-profile"][data-status="ready"]');
    await card.waitFor({ timeout: 60_000 });
    // Lengths 24..226 in about 24 power-of-two bins: width 16 from 16, 14 bins.
    const bars = card.getByTestId("profile-bar");
    assert.equal(await bars.count(), 14);
    const drawn = await bars.evaluateAll((els) =>
      els.map((e) => ({
        rows: Number(e.getAttribute("data-rows")),
        over: e.getAttribute("data-over") === "true",
        height: Number(e.getAttribute("height")),
        title: e.querySelector("title")?.textContent,
      })),
    );
    assert.deepEqual(
      drawn.filter((b) => b.rows > 0).map((b) => [b.title, b.over]),
      [
        ["16–31 tokens: 3 rows", false],
        ["32–47 tokens: 1 row", false],
        ["160–175 tokens: 1 row", true],
        ["224–239 tokens: 1 row", true],
      ],
    );
    assert.ok(drawn.every((b) => b.rows > 0 === b.height > 0));
    // The maxLength line: 64 ends the fourth bin's first token (64..79).
    const marker = card.getByTestId("profile-max-length");
    assert.equal(await marker.textContent(), "maxLength 64");
    assert.equal(Number(await marker.getAttribute("data-x")), ((3 + 1 / 16) * 720) / 14);
    assert.equal(await card.getByTestId("profile-rows").textContent(), `6 rows · 505 tokens (${TEST_MODEL})`);
    assert.equal(await card.getByTestId("profile-prompt").textContent(), "p50 22 · p95 120 · max 120");
    assert.equal(await card.getByTestId("profile-answer").textContent(), "p50 2 · p95 201 · max 201");
    assert.equal(await card.getByTestId("profile-over").textContent(), "2 rows");
    assert.match(
      (await card.getByTestId("profile-suggestion").textContent()) ?? "",
      /^256 \(holds 95% of rows/,
    );
    assert.equal(
      await card.getByTestId("profile-duplicates").textContent(),
      "2 rows (first: row 2 repeats row 1)",
    );
    await maybeScreenshot(page, "job-detail-dataset-profile");
    assert.deepEqual(session.browser.pageErrors, []);
  });

  test("/api/jobs/:id/profile answers in the one error shape for an unknown job", async () => {
    const ok = await studioFetch(session.studio, `/api/jobs/${jobId}/profile`);
    assert.equal(ok.status, 200);
    const { profile } = (await ok.json()) as {
      profile: { status: string; maxLength: number; baseModel: string };
    };
    assert.deepEqual([profile.status, profile.maxLength, profile.baseModel], ["ready", 64, TEST_MODEL]);
    const missing = await studioFetch(
      session.studio,
      "/api/jobs/00000000-0000-7000-8000-000000000000/profile",
    );
    assert.equal(missing.status, 404);
    const body = (await missing.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, "not_found");
  });
});
