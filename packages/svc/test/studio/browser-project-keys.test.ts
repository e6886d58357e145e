// Project API keys in Studio (Chromium, a real `svc dev` and `svc server`):
// the Endpoints page issues a key, shown once; the official openai client,
// with only baseURL and that key, starts a fine-tuning job, which Studio's job
// page shows live with its loss chart; revoking the key in Studio makes the
// client's next request fail.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import OpenAI, { APIError, toFile } from "openai";
import { TEST_MODEL } from "../cli/harness.js";
import { chartPoints, chromiumMissing, studioInBrowser, TEST_MODEL_TRAINER, until } from "./browser.js";

const rows = Array.from({ length: 4 }, (_, i) =>
  JSON.stringify({
    messages: [
      { role: "user", content: `What is ${i} plus one?` },
      { role: "assistant", content: `${i + 1}` },
    ],
  }),
).join("\n");

describe("Studio in a browser: project API keys", { skip: chromiumMissing, timeout: 300_000 }, () => {
  const session = studioInBrowser({
    homePrefix: "studio-project-keys-home",
    project: { source: TEST_MODEL_TRAINER },
  });

  test("a key issued in Studio runs a fine-tuning job that Studio shows live, until it is revoked", async () => {
    const page = await session.open("endpoints");
    await page.getByTestId("project-key-label").fill("notebook");
    await page.getByTestId("project-key-issue").click();
    const plaintext = (await page.getByTestId("issued-project-plaintext").textContent()) ?? "";
    assert.match(plaintext, /^svc_proj_[0-9A-Za-z]{40}$/);
    await page.locator('[data-testid="project-keys-table"] tr[data-key-label="notebook"]').waitFor();

    const client = new OpenAI({ apiKey: plaintext, baseURL: `${session.server.apiUrl}/v1`, maxRetries: 0 });
    const file = await client.files.create({
      file: await toFile(Buffer.from(rows), "train.jsonl"),
      purpose: "fine-tune",
    });
    const job = await client.fineTuning.jobs.create({
      model: TEST_MODEL,
      training_file: file.id,
      hyperparameters: { n_epochs: 2, batch_size: 2 },
    });
    await session.open(`jobs/${job.id.slice("ftjob-".length)}`);
    await until(
      "the job's 4 steps on the chart",
      async () => (await chartPoints(page, "train-line")) === 4,
      120_000,
    );
    assert.equal((await client.fineTuning.jobs.retrieve(job.id)).hyperparameters.n_epochs, 2);

    await session.open("endpoints");
    const row = page.locator('[data-testid="project-keys-table"] tr[data-key-label="notebook"]');
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByText("revoked").waitFor();
    const refused = await client.files.list().then(
      () => assert.fail("a revoked key was accepted"),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof APIError);
    assert.equal(refused.status, 401);
  });
});
