// Studio end to end in Chromium against a real `svc dev` and a real `svc server`
// (tiny random model, so training takes seconds): Run training fills the chart
// live, job detail and statistics, jobs search and chips, a dropped stream,
// cancel. One flow in one file: later tests use the job the first one trains,
// so the server and training run once. The Playground and endpoints:
// browser-endpoints.test.ts.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startTestModelServer, TEST_MODEL, type TestServer, tempDir } from "../cli/harness.js";
import {
  chartPoints,
  chromiumMissing,
  launchStudioBrowser,
  maybeScreenshot,
  type StudioBrowser,
  TEST_MODEL_TRAINER,
  until as waitUntil,
} from "./browser.js";
import { makeProject, type StudioProcess, startStudio, studioFetch } from "./studio-process.js";

// Long enough to watch the chart grow: on a quiet machine with the native kernels
// the tiny model trains 40 steps in well under a second, faster than the page can poll.
const MAX_STEPS = 120;
const source = (name: string, extra = "") =>
  TEST_MODEL_TRAINER.replace('name: "support-bot"', `name: "${name}"`)
    .replace("maxSteps: 12", `maxSteps: ${MAX_STEPS}`)
    .replace("seed: 1,", `seed: 1,\n  evalDataset: { type: "file", path: "data/train.jsonl" },${extra}`);
/** Truncating every example to 2 tokens leaves nothing to train on: the run fails with training.failed. */
const FAILING = "\n  lora: { r: 4, alpha: 8, maxLength: 2 },";

/** Waits up to 120 s by default: these steps include whole training runs. */
const until = <T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 120_000) =>
  waitUntil(what, probe, timeoutMs);

describe("Studio in a browser against svc server", { skip: chromiumMissing, timeout: 600_000 }, () => {
  let server: TestServer;
  let studio: StudioProcess;
  let browser: StudioBrowser;
  let firstJobId = "";
  before(async () => {
    const home = await tempDir("studio-home");
    server = await startTestModelServer(home);
    const project = await makeProject({ source: source("support-bot") });
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

  test("Overview: Run training streams svc start's output and fills the live chart", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/`);
    const button = page.getByTestId("run-training");
    await button.getByText("Run training: support-bot").waitFor();
    await button.click();
    assert.equal(await button.isDisabled(), true, "disabled while the run is in flight");
    const log = page.getByTestId("run-log");
    const submitted = await until("the job line", async () =>
      (await log.textContent())?.match(/job ([0-9a-f-]{36}) submitted/),
    );
    firstJobId = submitted[1];
    // The live chart grows while the run goes on, one vertex per numeric loss.
    const seen = new Set<number>();
    await until("a completed run", async () => {
      seen.add(await chartPoints(page, "train-line"));
      return (
        (await page.locator(".card .badge").first().textContent()) === "completed" &&
        (await button.isEnabled())
      );
    });
    await until("every training point", async () => (await chartPoints(page, "train-line")) === MAX_STEPS);
    const partial = [...seen].filter((n) => n > 0 && n < MAX_STEPS);
    assert.ok(partial.length > 0, `chart filled while the run went on (saw ${[...seen].join(", ")})`);
    assert.ok((await chartPoints(page, "eval-line")) > 0, "eval points drawn");
    await page.getByTestId("legend-eval").waitFor();
    const text = (await log.textContent()) ?? "";
    assert.match(text, new RegExp(`done: job ${firstJobId}`), "the log shows what svc start printed");
    await maybeScreenshot(page, "overview-run");
  });

  test("Job detail: chart, Advanced statistics, event log and artifact count", async () => {
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/jobs/${firstJobId}`);
    await until("all points", async () => (await chartPoints(page, "train-line")) === MAX_STEPS);
    await until("the artifact count", async () =>
      /^\d+$/.test((await page.getByTestId("artifact-count").textContent()) ?? ""),
    );
    const artifacts = Number(await page.getByTestId("artifact-count").textContent());
    const rows = page.locator(".event-row");
    const completed = page.locator(".event-training-completed .event-message");
    assert.equal(await completed.textContent(), `${artifacts} ${artifacts === 1 ? "artifact" : "artifacts"}`);
    const logRows = await page.locator(".event-training-log .event-message").allTextContents();
    assert.equal(logRows[0], logRows[0].match(/^step=1( loss=[0-9.e-]+)?( evalLoss=[0-9.e-]+)?$/)?.[0]);
    assert.equal(await page.locator(".event-training-log .event-name").first().textContent(), "training.log");
    assert.ok((await rows.count()) >= MAX_STEPS + 2);
    // The mean on the Advanced card is the mean of the streamed losses.
    const losses = logRows
      .map((r) => r.match(/ loss=([0-9.e-]+)/)?.[1])
      .filter(Boolean)
      .map(Number);
    await page.getByLabel("Advanced").check();
    const meanText = (await page.getByTestId("stats-train-mean").textContent()) ?? "";
    const mean = losses.reduce((a, b) => a + b, 0) / losses.length;
    assert.equal(meanText.split(" ± ")[0], mean.toPrecision(5));
    assert.match((await page.getByTestId("stats-eval").textContent()) ?? "", /mean ± 95% CI/);
    // The eval task metrics: a point per eval in their own chart, each with its legend entry and card.
    // The answers ("3 plus 3 is 6.") are short, so exact match runs at every eval.
    const evals = await chartPoints(page, "eval-line");
    assert.equal(await chartPoints(page, "token-accuracy-line"), evals);
    assert.equal(await chartPoints(page, "exact-match-line"), evals);
    assert.equal(await page.getByTestId("legend-token-accuracy").textContent(), "Eval token accuracy");
    assert.equal(await page.getByTestId("legend-exact-match").textContent(), "Eval exact match");
    assert.match((await page.getByTestId("stats-token-accuracy").textContent()) ?? "", /n = \d+/);
    assert.match((await page.getByTestId("stats-exact-match").textContent()) ?? "", /mean ± 95% CI/);
    const metricsBox = (await page.getByTestId("task-metrics-chart").boundingBox())!;
    await page.mouse.move(metricsBox.x + metricsBox.width - 20, metricsBox.y + metricsBox.height / 2);
    assert.match(
      (await page.getByTestId("task-metrics-readout").textContent()) ?? "",
      new RegExp(`^step ${MAX_STEPS}token accuracy \\d+\\.\\d%exact match \\d+\\.\\d%$`),
    );
    // Hover reads the nearest step.
    const box = (await page.getByTestId("loss-chart").boundingBox())!;
    await page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
    assert.match(
      (await page.getByTestId("chart-readout").textContent()) ?? "",
      new RegExp(`step ${MAX_STEPS}`),
    );
    await maybeScreenshot(page, "job-detail");

    // CSV and PNG export of the chart.
    const [csv] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "CSV" }).click(),
    ]);
    const csvText = await readFile((await csv.path())!, "utf8");
    const csvLines = csvText.trim().split("\n");
    assert.equal(csvLines[0], "step,loss,evalLoss,evalTokenAccuracy,evalExactMatch");
    assert.equal(csvLines.length, MAX_STEPS + 1);
    assert.equal(Number(csvLines[1].split(",")[1]), losses[0]);
    // Eval rows carry both metrics as fractions; the others leave them empty.
    const evalRows = csvLines.slice(1).filter((line) => line.split(",")[2] !== "");
    assert.equal(evalRows.length, evals);
    for (const row of evalRows) {
      for (const cell of row.split(",").slice(3)) assert.ok(Number(cell) >= 0 && Number(cell) <= 1, row);
    }
    const [png] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "PNG" }).click(),
    ]);
    const pngBytes = await readFile((await png.path())!);
    assert.deepEqual([...pngBytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], "a PNG file");
    assert.ok(pngBytes.length > 5000, `PNG of ${pngBytes.length} bytes`);

    // Dark theme follows prefers-color-scheme.
    const background = () =>
      page.evaluate(
        () =>
          (
            globalThis as unknown as {
              getComputedStyle(e: unknown): { backgroundColor: string };
              document: { documentElement: unknown };
            }
          ).getComputedStyle(
            (globalThis as unknown as { document: { documentElement: unknown } }).document.documentElement,
          ).backgroundColor,
      );
    const light = await background();
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await background();
    assert.notEqual(dark, light);
    assert.equal(dark, "rgb(13, 17, 23)");
    await maybeScreenshot(page, "job-detail-dark");
    await page.emulateMedia({ colorScheme: "light" });
  });

  test("Job detail: a dropped stream shows the banner until the next frame", async () => {
    const { page } = browser;
    let dropped = false;
    await page.route("**/api/jobs/*/events*", (route) => {
      if (!dropped) {
        dropped = true;
        return route.abort("connectionreset");
      }
      return route.continue();
    });
    // Leave the job page first, so that coming back mounts it afresh and opens a new stream; two
    // hash changes in a row can reach the app as one, which keeps the old page and its stream.
    await page.goto(`http://localhost:${studio.port}/#/jobs`);
    await page.getByTestId("jobs-table").waitFor();
    await page.goto(`http://localhost:${studio.port}/#/jobs/${firstJobId}`);
    const banner = page.getByTestId("stream-banner");
    await banner.waitFor();
    assert.equal(await banner.textContent(), "Event stream interrupted.");
    // The browser reconnects by itself; the first frame clears the banner.
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    await until("replayed points", async () => (await chartPoints(page, "train-line")) === MAX_STEPS);
    await page.unroute("**/api/jobs/*/events*");
  });

  test("Jobs: list, search on name or id, one status chip at a time; a failed run's red banner", async () => {
    // A second run with another trainer name, started through the API, that fails.
    await writeFile(join(studio.projectDir, "src", "svc", "index.ts"), source("triage-bot", FAILING));
    await studioFetch(studio, "/api/manifest");
    const res = await studioFetch(studio, "/api/train", { method: "POST" });
    const secondId = res.headers.get("X-Svc-Job-Id");
    assert.match(secondId ?? "", /^[0-9a-f-]{36}$/, "job id header");
    assert.match(await res.text(), new RegExp(`job ${secondId} submitted`));

    const { page } = browser;
    const listCalls: number[] = [];
    const onRequest = (r: { url(): string }) => {
      if (new URL(r.url()).pathname === "/api/jobs") listCalls.push(Date.now());
    };
    page.on("request", onRequest);
    await page.goto(`http://localhost:${studio.port}/#/jobs`);
    const rows = page.locator("[data-testid=jobs-table] tbody tr");
    await until("two rows", async () => (await rows.count()) === 2);
    // The first run wrote .svc/state.json: the header now names the project and the API host.
    const identity = new RegExp(
      `^anonymous · anon-[a-z0-9-]+ / demo-project · ${new URL(server.apiUrl).host}$`,
    );
    await until("the project in the header", async () =>
      identity.test((await page.getByTestId("identity").textContent()) ?? ""),
    );
    // One GET at mount, then one every 5 s; Refresh fetches at once.
    await until("two polls", async () => listCalls.length >= 3, 15_000);
    const gap = listCalls[2] - listCalls[1];
    assert.ok(gap > 4500 && gap < 6500, `poll interval ${gap} ms`);
    const before = listCalls.length;
    await page.getByTestId("jobs-refresh").click();
    await until("the refresh request", async () => listCalls.length > before, 1000);
    page.off("request", onRequest);
    const search = page.getByTestId("jobs-search");
    await search.fill("TRIAGE");
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.first().getAttribute("data-job-id"), secondId);
    // Job ids are UUIDv7 (time first): search on the random tail.
    await search.fill(firstJobId.slice(-12).toUpperCase());
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.first().getAttribute("data-job-id"), firstJobId);
    await search.fill("no-such-job");
    assert.equal(await page.getByTestId("jobs-empty").textContent(), "No matches");
    await search.fill("");
    await page.getByRole("button", { name: "Running" }).click();
    assert.equal(await page.getByTestId("jobs-empty").textContent(), "No matches");
    await page.getByRole("button", { name: "Failed" }).click();
    await until(
      "the failed row",
      async () =>
        (await rows
          .first()
          .getAttribute("data-job-id")
          .catch(() => null)) === secondId,
    );
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.first().locator(".badge").getAttribute("class"), "badge status-failed");
    await page.getByRole("button", { name: "Completed" }).click();
    assert.equal(await rows.count(), 1);
    assert.equal(await rows.first().getAttribute("data-job-id"), firstJobId);
    assert.equal(await page.getByRole("button", { name: "Completed" }).getAttribute("aria-pressed"), "true");
    assert.equal(await page.getByRole("button", { name: "Failed" }).getAttribute("aria-pressed"), "false");
    const link = rows.first().locator("a");
    assert.match((await link.getAttribute("href")) ?? "", /^#\/jobs\/[0-9a-f-]{36}$/);
    assert.equal(
      await rows.first().locator("td.mono").textContent(),
      await rows.first().getAttribute("data-job-id"),
    );
    await page.getByRole("button", { name: "All" }).click();
    await maybeScreenshot(page, "jobs");

    // The failed job's detail: the error in the log and, in red, above the chart.
    await page.goto(`http://localhost:${studio.port}/#/jobs/${secondId}`);
    const banner = page.getByTestId("failure-banner");
    await banner.waitFor();
    const error = (await banner.textContent()) ?? "";
    assert.match(error, /maxLength 2/);
    assert.equal(await page.locator(".event-training-failed .event-message").textContent(), error);
    assert.equal(
      await page.getByTestId("chart-placeholder").textContent(),
      "Waiting for training.log events…",
    );
    await maybeScreenshot(page, "job-failed");
  });

  test("Cancel on a running job stops it; the event log keeps the newest 500 rows", async () => {
    await writeFile(
      join(studio.projectDir, "src", "svc", "index.ts"),
      source("long-run").replace(`maxSteps: ${MAX_STEPS}`, "maxSteps: 5000"),
    );
    await studioFetch(studio, "/api/manifest");
    const watching = new AbortController();
    const res = await studioFetch(studio, "/api/train", { method: "POST", signal: watching.signal });
    const jobId = res.headers.get("X-Svc-Job-Id")!;
    watching.abort(); // stop watching; the job keeps running
    const { page } = browser;
    await page.goto(`http://localhost:${studio.port}/#/jobs/${jobId}`);
    // Past 500 events the log keeps only the newest 500 rows (the chart keeps every point).
    await until("over 520 points", async () => (await chartPoints(page, "train-line")) >= 520);
    await page.getByRole("button", { name: "Cancel" }).click();
    await until(
      "cancelled",
      async () => (await page.locator("h1 .badge").textContent()) === "cancelled",
      60_000,
    );
    assert.equal(await page.getByRole("button", { name: "Cancel" }).count(), 0);
    const job = (await (await studioFetch(studio, `/api/jobs/${jobId}`)).json()) as {
      job: { status: string };
    };
    assert.equal(job.job.status, "cancelled");
    assert.equal(await page.locator(".event-row").count(), 500);
    assert.notEqual(await page.locator(".event-row .event-name").first().textContent(), "training.started");
    assert.equal(await page.locator(".event-row .event-name").last().textContent(), "training.cancelled");
  });
});
