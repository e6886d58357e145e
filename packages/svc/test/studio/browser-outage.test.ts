// Studio in Chromium when the cloud API it talks to goes away (issue 17): a
// banner names the API and why it does not answer, and clears when it answers
// again: a remote API (SVC_CLOUD_API_URL) killed and started again on the same
// port, and the local server svc started, killed with SIGKILL and restarted by
// svc dev itself.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  cliEnv,
  createTestModel,
  freePort,
  runSvc,
  startTestServer,
  TEST_MODEL,
  type TestServer,
} from "../cli/harness.js";
import {
  chartPoints,
  chromiumMissing,
  launchStudioBrowser,
  maybeScreenshot,
  type StudioBrowser,
  until,
} from "./browser.js";
import { makeProject, type StudioProcess, startStudio, studioFetch } from "./studio-process.js";

/**
 * Listens on the port (once the killed server has let go of it), resetting
 * every connection: the API there is down, and a server started meanwhile
 * cannot bind it.
 */
async function holdPort(port: number): Promise<Server> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const holder = createServer((socket) => socket.destroy());
    try {
      await new Promise<void>((resolve, reject) => {
        holder.once("error", reject);
        holder.listen(port, "127.0.0.1", resolve);
      });
      return holder;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE" || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

describe("Studio in a browser when the cloud API goes away", {
  skip: chromiumMissing,
  timeout: 400_000,
}, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    // Bounded, so that a cleanup that never settles fails this file instead of stalling the run.
    for (const c of cleanups.reverse()) {
      await Promise.race([c(), new Promise((r) => setTimeout(r, 30_000).unref())]).catch(() => {});
    }
  });

  async function open(
    env: Record<string, string>,
  ): Promise<{ studio: StudioProcess; browser: StudioBrowser; home: string }> {
    const project = await makeProject();
    const studio = await startStudio({ ...project, env });
    cleanups.push(() => studio.stop());
    const browser = await launchStudioBrowser();
    cleanups.push(() => browser.close());
    await browser.page.goto(`http://localhost:${studio.port}/#/jobs`);
    return { studio, browser, home: project.home };
  }

  test("a remote cloud API: the banner appears when it is killed and clears when it is back", async (t) => {
    const home = (await makeProject()).home;
    let server: TestServer = await startTestServer({ home, args: ["--bundled-models", "none"] });
    cleanups.push(() => server.stop());
    const { browser } = await open({ SVC_CLOUD_API_URL: server.apiUrl });
    const { page } = browser;
    const banner = page.getByTestId("api-banner");
    await page
      .getByTestId("identity")
      .getByText(/^anonymous · /)
      .waitFor();
    assert.equal(await banner.count(), 0);

    server.process.kill("SIGKILL");
    const killedAt = Date.now();
    await banner.waitFor({ timeout: 30_000 });
    const shownMs = Date.now() - killedAt;
    const host = new URL(server.apiUrl).host;
    assert.match(
      (await banner.textContent()) ?? "",
      new RegExp(
        `^The cloud API at ${host.replaceAll(".", "\\.")} is not answering \\(connection (refused|reset)\\)\\. Retrying every 3 s; the page recovers when it is back\\.$`,
      ),
    );
    assert.equal(await banner.getAttribute("role"), "alert");
    await maybeScreenshot(page, "api-banner-remote");

    server = await startTestServer({
      home,
      args: ["--bundled-models", "none"],
      port: Number(new URL(server.apiUrl).port),
      dataDir: server.dataDir,
    });
    const backAt = Date.now();
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    assert.deepEqual(browser.pageErrors, []);
    t.diagnostic(
      `remote: banner ${shownMs} ms after the kill, cleared ${Date.now() - backAt} ms after the restart`,
    );
  });

  test("the local server svc started: killed with SIGKILL, svc dev restarts it and the banner clears", async (t) => {
    const ports = {
      SVC_LOCAL_API_PORT: String(await freePort()),
      SVC_LOCAL_EDGE_PORT: String(await freePort()),
    };
    const { browser, home, studio } = await open({ SVC_CLOUD_API_URL: "", ...ports });
    const env = cliEnv(home, null, ports);
    cleanups.push(() => runSvc(["server", "stop"], { cwd: home, env }));
    const record = join(home, ".svc", "server", "server.json");
    const { page } = browser;
    const banner = page.getByTestId("api-banner");
    // Opening Studio started the local server (the banner's question does that when nothing answers).
    const first = await until(
      "the local server's pid file",
      async () => JSON.parse(await readFile(record, "utf8")),
      90_000,
    );
    await banner.waitFor({ state: "detached", timeout: 60_000 });

    process.kill(first.pid, "SIGKILL");
    const killedAt = Date.now();
    // Studio's other requests start the server again at once, often before the
    // banner's next poll (every 3 s) could find it down. Holding its port until
    // the banner shows makes the outage outlast a poll, as a slow restart would.
    const holder = await holdPort(Number(ports.SVC_LOCAL_API_PORT));
    cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
    await banner.waitFor({ timeout: 30_000 }).catch(async (e) => {
      // What Studio and the server saw, to tell a slow machine from a missed outage.
      const now = await (await studioFetch(studio, "/api/connection")).text().catch(String);
      const log = await readFile(join(home, ".svc", "server", "server.log"), "utf8").catch(String);
      throw new Error(
        `${e.message}\n/api/connection: ${now}\nserver log:\n${log}\nsvc dev:\n${studio.output()}`,
      );
    });
    const shownMs = Date.now() - killedAt;
    const log = join(home, ".svc", "server", "server.log");
    // A kill that lands while a poll is open reads as a reset connection rather than a refused one.
    assert.match(
      (await banner.textContent()) ?? "",
      new RegExp(
        `^The local server at 127\\.0\\.0\\.1:${ports.SVC_LOCAL_API_PORT} is not answering \\(connection (refused|reset)\\)\\. svc dev is restarting it; its log: ${log.replaceAll(".", "\\.")}$`,
      ),
    );
    await maybeScreenshot(page, "api-banner-local");
    await new Promise((resolve) => holder.close(resolve));
    await banner.waitFor({ state: "detached", timeout: 90_000 });
    const clearedMs = Date.now() - killedAt;
    const second = JSON.parse(await readFile(record, "utf8"));
    assert.notEqual(second.pid, first.pid);
    assert.match(
      await readFile(log, "utf8"),
      new RegExp(`pid ${first.pid} \\(started [^)]+\\) is gone without a clean exit`),
    );
    assert.deepEqual(browser.pageErrors, []);
    t.diagnostic(`local: banner ${shownMs} ms after the kill, cleared ${clearedMs} ms after it`);
  });

  test("a job page whose event stream failed during the outage follows the job to its end once the API is back", async (t) => {
    // Steps take tens of milliseconds, and the page sees the first checkpoint a
    // poll or more after it is saved: 240 steps leave the kill seconds of margin
    // to land mid-run.
    const STEPS = 240;
    const model = await createTestModel({ hiddenSize: 128, intermediateSize: 256, numHiddenLayers: 4 });
    const args = ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`];
    const project = await makeProject({
      source: `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 16 }, (_, i) => ({ messages: [{ role: "user", content: ("question " + i + " ").repeat(12) }, { role: "assistant", content: ("answer " + i + " ").repeat(12) }] }));
export default createSvc({ trainer: createTrainer({ name: "outage", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, maxSteps: ${STEPS}, saveSteps: 10, batchSize: 4 }) });
`,
    });
    let server: TestServer = await startTestServer({ home: project.home, args });
    cleanups.push(() => server.stop());
    const studio = await startStudio({
      ...project,
      env: { SVC_CLOUD_API_URL: server.apiUrl, SVC_EXTRA_MODELS: TEST_MODEL },
    });
    cleanups.push(() => studio.stop());
    const submitted = await runSvc(["start", "--detach"], {
      cwd: project.projectDir,
      env: cliEnv(project.home, server.apiUrl),
    });
    assert.equal(submitted.code, 0, submitted.stderr);
    const jobId = /job (\S+) submitted/.exec(submitted.stdout)![1];
    const browser = await launchStudioBrowser();
    cleanups.push(() => browser.close());
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/jobs/${jobId}`);
    const points = () => chartPoints(page, "train-line");
    // After the first checkpoint, so the job has something to resume from.
    await until(
      "the first checkpoint",
      async () => (await page.locator(".event-checkpoint-saved").count()) >= 1,
      90_000,
    );
    assert.notEqual(
      await page.locator("h1 .badge").textContent(),
      "completed",
      "the job ended before the outage; it needs more steps",
    );

    server.process.kill("SIGKILL");
    await page.getByTestId("api-banner").waitFor({ timeout: 30_000 });
    await page.getByTestId("stream-banner").waitFor({ timeout: 30_000 });
    assert.equal(await page.getByTestId("stream-banner").textContent(), "Event stream interrupted.");
    // Long enough for the browser's own reconnect to get Studio's 502 and give up on that EventSource.
    await new Promise((r) => setTimeout(r, 6000));
    const before = await points();
    server = await startTestServer({
      home: project.home,
      args,
      port: Number(new URL(server.apiUrl).port),
      dataDir: server.dataDir,
    });
    await page.getByTestId("api-banner").waitFor({ state: "detached", timeout: 30_000 });
    await until(
      "the job completed on the page",
      async () => (await page.locator("h1 .badge").textContent()) === "completed",
      90_000,
    );
    assert.equal(await page.getByTestId("stream-banner").count(), 0);
    assert.ok((await points()) >= STEPS, `the chart went on past ${before} points to the end`);
    assert.equal(await page.locator(".event-training-completed").count(), 1);
    assert.deepEqual(browser.pageErrors, []);
    t.diagnostic(`job page: ${before} points before the outage, ${await points()} at the end`);
  });
});
