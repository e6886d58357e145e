// Studio's job detail for a GRPO job, in Chromium against a real `svc dev` and
// `svc server`: the Metadata names the method, the rewards chart draws the mean
// reward (with its ±std band) and each grader's mean at every logged step, the
// health charts the KL, completion length and zero-advantage share, and the
// Samples panel shows the latest step's sampled completions, escaped, with their
// scores, and another step's when picked. The job has an eval set (evalSteps 2):
// the rewards chart draws its mean reward at the steps it ran (2 and the last, 3). The SDK's createTrainer takes no
// graders yet, so the GRPO job is posted to /v1/jobs with the project's own
// credentials (written by `svc start` in the session's HOME).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { CloudApiClient } from "../../src/sdk/client.js";
import { bearerToken, type Credentials } from "../../src/sdk/credentials.js";
import { TEST_MODEL } from "../cli/harness.js";
import {
  chartPoints,
  chromiumMissing,
  maybeScreenshot,
  studioInBrowser,
  TEST_MODEL_TRAINER,
  until,
} from "./browser.js";

const STEPS = 3;
const PROMPTS = ["a horse", "the moon", "a river", "<b>the night</b>"].map((topic) =>
  JSON.stringify({ messages: [{ role: "user", content: `Write about ${topic}.` }], word: "the" }),
);
const GRADER = {
  type: "string_check",
  name: "says the",
  operation: "like",
  input: "{{sample.output_text}}",
  reference: "{{item.word}}",
};

interface LoggedSample {
  completion: string;
}

/** The job's training.log grpo samples per step, read from its (finished, so closing) event stream. */
async function samplesByStep(client: CloudApiClient, jobId: string): Promise<Map<number, LoggedSample[]>> {
  const text = await (await client.openJobEvents(jobId)).text();
  const out = new Map<number, LoggedSample[]>();
  for (const block of text.split("\n\n")) {
    if (!/^event: training\.log$/m.test(block)) continue;
    const data = /^data: (.*)$/m.exec(block);
    const payload = data ? JSON.parse(data[1]) : null;
    if (payload?.grpo) out.set(payload.step, payload.grpo.samples);
  }
  return out;
}

describe("Studio shows a GRPO job's rewards, health and samples", {
  skip: chromiumMissing,
  timeout: 300_000,
}, () => {
  let jobId = "";
  let client: CloudApiClient;
  const session = studioInBrowser({
    homePrefix: "studio-grpo-home",
    project: { source: TEST_MODEL_TRAINER },
    async beforeStudio(s) {
      // svc start writes the credentials and the project; its SFT job is not looked at
      await s.submitJob();
      const credentials = JSON.parse(await readFile(join(s.home, ".svc", "credentials.json"), "utf8"));
      const state = JSON.parse(await readFile(join(s.projectDir, ".svc", "state.json"), "utf8"));
      client = new CloudApiClient({
        baseUrl: s.server.apiUrl,
        token: bearerToken(credentials as Credentials),
        scope: { orgSlug: state.orgSlug, projectSlug: state.projectSlug },
      });
      const dataset = await client.uploadDataset(`${PROMPTS.join("\n")}\n`, { name: "prompts.jsonl" });
      const evalSet = await client.uploadDataset(`${PROMPTS.slice(0, 2).join("\n")}\n`, {
        name: "prompts-eval.jsonl",
      });
      const job = await client.createJob({
        name: "grpo-view",
        baseModel: TEST_MODEL,
        datasetId: dataset.id,
        evalDatasetId: evalSet.id,
        method: "grpo",
        graders: [{ grader: GRADER }],
        hyperparameters: {
          maxSteps: STEPS,
          batchSize: 2,
          learningRate: 5e-3,
          seed: 5,
          numGenerations: 4,
          maxCompletionTokens: 6,
          temperature: 1,
          beta: 0.04,
          evalSteps: 2,
        },
      } as Parameters<CloudApiClient["createJob"]>[0]);
      jobId = job.id;
      await until(
        "the GRPO job to finish",
        async () => {
          const j = await client.getJob(jobId);
          assert.ok(j.status !== "failed" && j.status !== "cancelled", JSON.stringify(j));
          return j.status === "completed";
        },
        240_000,
      );
    },
  });

  test("the job page charts every logged step and shows the step's sampled completions", async () => {
    const logged = await samplesByStep(client, jobId);
    assert.deepEqual([...logged.keys()], [1, 2, 3]);
    const page = await session.open(`jobs/${jobId}`);
    await page.getByText("completed").first().waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId("method").textContent(), "GRPO (rewards)");
    await page.getByTestId("grpo-rewards").waitFor({ timeout: 30_000 });
    assert.equal(await chartPoints(page, "mean-reward-line"), STEPS);
    assert.equal(await chartPoints(page, "reward-says the-line"), STEPS);
    await page.getByTestId("legend-reward-says the").waitFor();
    // the eval set's mean reward where an eval ran: step 2 (evalSteps) and the last step
    assert.equal(await chartPoints(page, "eval-reward-line"), 2);
    await page.getByTestId("legend-eval-reward").waitFor();
    // the ±std band is drawn (it may be flat: on the test model every group can score alike)
    assert.equal(await page.getByTestId("reward-std-band").count(), 1);
    for (const health of ["grpo-kl-line", "grpo-completion-length-line", "grpo-zero-advantage-line"])
      assert.equal(await chartPoints(page, health), STEPS, health);
    // the Samples panel: the latest step by default, its completions as text
    const texts = async () => page.getByTestId("grpo-sample-text").allTextContents();
    assert.equal(await page.getByTestId("grpo-samples-step").inputValue(), String(STEPS));
    const latest = logged.get(STEPS)!.map((s) => s.completion);
    assert.ok(latest.length > 0);
    assert.deepEqual(await texts(), latest);
    assert.equal(await page.getByTestId("grpo-sample-reward").count(), latest.length);
    await page.getByTestId("grpo-samples-step").selectOption("1");
    await until(
      "step 1's samples",
      async () => JSON.stringify(await texts()) === JSON.stringify(logged.get(1)!.map((s) => s.completion)),
    );
    await maybeScreenshot(page, "grpo-job");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
