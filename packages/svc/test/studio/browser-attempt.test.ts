// Studio's job detail for a job restarted after a crash (issue 39), in
// Chromium against a real `svc dev` and `svc server`: the job's training
// process is killed with SIGKILL before it saved a checkpoint, the server
// starts it again from step 0 as attempt 2, and the Metadata names the
// attempt and why the first one ended, live and after the job completed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { createTestModel, startTestServer, TEST_MODEL } from "../cli/harness.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER, until } from "./browser.js";

/** The pid of the server's training process (a child running worker/training-process.js), if one runs. */
const trainingProcessOf = (serverPid: number) =>
  spawnSync("ps", ["-o", "pid=,args=", "--ppid", String(serverPid)], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((line) => /training-process\.js/.test(line))
    .map((line) => Number.parseInt(line, 10))[0];

describe("Studio shows the attempt of a job restarted after a crash", {
  skip: chromiumMissing,
  timeout: 300_000,
}, () => {
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-attempt-home",
    // Long enough to be killed mid-run, with no checkpoint before the end.
    project: {
      source: TEST_MODEL_TRAINER.replace("maxSteps: 12,", "maxSteps: 120,").replace(
        "saveSteps: 6,",
        "saveSteps: 1000,",
      ),
    },
    async startServer(home) {
      // Big enough that 120 steps take seconds, so the kill lands mid-run.
      const model = await createTestModel({ hiddenSize: 128, intermediateSize: 256, numHiddenLayers: 4 });
      return startTestServer({
        home,
        args: ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`],
      });
    },
    async beforeStudio(s) {
      jobId = await s.submitJob();
      // The server runs each job in a child process: kill that one alone, once it trains.
      const trainer = await until("the job's training process", async () =>
        trainingProcessOf(s.server.process.pid!),
      );
      await new Promise((r) => setTimeout(r, 500));
      process.kill(trainer, "SIGKILL");
    },
  });

  test("the Metadata names attempt 2 and the crash that ended attempt 1", async () => {
    const page = await session.open(`jobs/${jobId}`);
    const attempt = page.getByTestId("attempt");
    await attempt.waitFor({ timeout: 60_000 });
    const text = () => attempt.textContent().then((t) => t ?? "");
    assert.match(await text(), /^2restarted after: the training process was killed by SIGKILL/);
    await page.getByTestId("metadata").getByText("completed").waitFor({ timeout: 120_000 });
    await page.reload();
    await attempt.waitFor();
    assert.match(await text(), /^2restarted after: the training process was killed by SIGKILL/);
    assert.deepEqual(session.browser.pageErrors, []);
    await maybeScreenshot(page, "job-attempt-2");
  });
});
