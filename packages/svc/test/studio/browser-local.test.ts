// Browser checks that need no cloud API: the Overview's three manifest states,
// the header identity, and the empty Jobs and Endpoints pages.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromiumMissing, launchStudioBrowser, maybeScreenshot, type StudioBrowser } from "./browser.js";
import { DEAD_CLOUD_API, makeProject, type StudioProcess, startStudio } from "./studio-process.js";

describe("Studio in a browser, without a cloud API", { skip: chromiumMissing }, () => {
  let studio: StudioProcess;
  let browser: StudioBrowser;
  before(async () => {
    const project = await makeProject();
    await mkdir(join(project.home, ".svc"), { recursive: true });
    await writeFile(
      join(project.home, ".svc", "credentials.json"),
      JSON.stringify({ mode: "anonymous", token: "t", orgSlug: "anon-4f2a", apiUrl: DEAD_CLOUD_API }),
    );
    studio = await startStudio({ ...project, env: { SVC_CLOUD_API_URL: DEAD_CLOUD_API } });
    browser = await launchStudioBrowser();
  });
  after(async () => {
    await browser?.close();
    await studio?.stop();
  });
  const source = (text: string) => writeFile(join(studio.projectDir, "src", "svc", "index.ts"), text);

  test("Overview: Run training: <trainer name>, enabled; the header shows the identity with the API host", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/`);
    const button = page.getByTestId("run-training");
    await assert.doesNotReject(button.getByText("Run training: support-bot").waitFor());
    assert.equal(await button.isEnabled(), true);
    assert.equal(await page.getByTestId("identity").textContent(), "anonymous · anon-4f2a · 127.0.0.1:9");
    await maybeScreenshot(page, "overview");
  });

  test("Overview: no trainer → the spec's message, button disabled; reload picks up the edit", async () => {
    const { page } = browser;
    await source("export const nothing = 1;\n");
    await page.reload();
    const message = page.getByTestId("manifest-message");
    await message.waitFor();
    assert.equal(
      await message.textContent(),
      "No trainer in src/svc/index.ts yet. Add createTrainer(...) and pass it to createSvc.",
    );
    assert.equal(await page.getByTestId("run-training").isDisabled(), true);
  });

  test("Overview: a build failure → Couldn't read manifest: <error>", async () => {
    const { page } = browser;
    await source("export default {\n");
    await page.reload();
    const message = page.getByTestId("manifest-message");
    await message.waitFor();
    assert.match((await message.textContent()) ?? "", /^Couldn't read manifest: .*index\.ts/s);
    assert.equal(await page.getByTestId("run-training").isDisabled(), true);
  });

  test("Jobs and Endpoints render their empty states", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/jobs`);
    assert.equal(await page.getByTestId("jobs-empty").textContent(), "No jobs yet");
    await page.goto(`http://localhost:${studio.port}/#/endpoints`);
    await page.getByTestId("endpoints-empty").waitFor();
    await page.goto(`http://localhost:${studio.port}/#/playground`);
    await page.getByTestId("pg-input").waitFor();
    assert.deepEqual(browser.pageErrors, []);
  });

  test("a stale tab from an earlier launch on the same port gets 403 and a reload prompt", async () => {
    const { page } = browser;
    const port = await freePort();
    const env = { SVC_CLOUD_API_URL: DEAD_CLOUD_API };
    const first = await startStudio({
      projectDir: studio.projectDir,
      home: studio.home,
      args: ["--port", String(port)],
      env,
    });
    await page.goto(`http://localhost:${port}/#/jobs`);
    await page.getByTestId("jobs-empty").waitFor();
    await first.stop();
    const second = await startStudio({
      projectDir: studio.projectDir,
      home: studio.home,
      args: ["--port", String(port)],
      env,
    });
    try {
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith("/api/jobs")),
        page.getByTestId("jobs-refresh").click(),
      ]);
      assert.equal(response.status(), 403);
      await page.getByTestId("stale-banner").waitFor();
      await page.getByTestId("stale-banner").getByRole("button", { name: "Reload" }).click();
      await page.getByTestId("jobs-empty").waitFor();
      assert.equal(await page.getByTestId("stale-banner").count(), 0, "a reload picks up the new token");
    } finally {
      await second.stop();
    }
  });

  test("a stale tab (token from an earlier launch) gets 403 from the API", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/`);
    const status = await page.evaluate(async () => {
      const r = await fetch("/api/jobs", {
        headers: { "X-Svc-Studio-Token": "stale-token-from-last-launch" },
      });
      return r.status;
    });
    assert.equal(status, 403);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
