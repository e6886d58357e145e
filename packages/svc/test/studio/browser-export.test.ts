// Job detail's Export card in Chromium against a real `svc dev` and `svc
// server`: a finished job's adapter exported as GGUF q8_0, its files listed
// with their sizes, and each saved through the browser (the GGUF file starts
// with its magic, the Modelfile names it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import {
  cliEnv,
  runSvc,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "../cli/harness.js";
import { PROFILE_ROWS, PROFILE_TRAINER } from "../cli/profile-fixture.js";
import { chromiumMissing, launchStudioBrowser, maybeScreenshot, type StudioBrowser } from "./browser.js";
import { makeProject, type StudioProcess, startStudio } from "./studio-process.js";

describe("Studio job detail: export", { skip: chromiumMissing, timeout: 300_000 }, () => {
  let server: TestServer;
  let studio: StudioProcess;
  let browser: StudioBrowser;
  let jobId = "";
  before(async () => {
    const home = await tempDir("studio-export-home");
    server = await startTestModelServer(home);
    const project = await makeProject({ source: PROFILE_TRAINER, rows: PROFILE_ROWS });
    const env = cliEnv(home, server.apiUrl);
    const started = await runSvc(["start", "--detach"], { cwd: project.projectDir, env });
    assert.equal(started.code, 0, started.stderr);
    jobId = /^job (\S+) submitted/m.exec(started.stdout)?.[1] ?? "";
    const followed = await runSvc(["jobs", "follow", jobId], { cwd: project.projectDir, env });
    assert.equal(followed.code, 0, followed.stderr);
    studio = await startStudio({
      projectDir: project.projectDir,
      home,
      env: { SVC_CLOUD_API_URL: server.apiUrl, SVC_EXTRA_MODELS: TEST_MODEL },
    });
    browser = await launchStudioBrowser();
  });
  after(async () => {
    await browser?.close();
    await studio?.stop();
    await server?.stop();
  });

  test("exports the final adapter as GGUF q8_0 and saves its files", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/jobs/${jobId}`);
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
    assert.deepEqual(browser.pageErrors, []);
  });
});
