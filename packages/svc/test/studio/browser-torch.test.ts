// Studio's job detail for a job on the torch backend, in Chromium against a
// real `svc dev`, `svc server` (PostgreSQL, no in-process runner) and `svc
// worker --backend torch` (Debian's python3-torch, CPU): while no torch
// worker runs, the page says why the job waits; once one has trained it, the
// Metadata shows the backend with its device and the peak memory it reported.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { needs } from "@svc/engine/testing";
import { cliEnv, createTestModel, REPO_ROOT, startTestServer, TEST_MODEL } from "../cli/harness.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER } from "./browser.js";
import { SVC_BIN } from "./studio-process.js";

const PYTHON = process.env.SVC_PYTHON ?? "/usr/bin/python3";
/** The server package's test PostgreSQL (packages/server/test/postgres-cluster.ts), as far as this test uses it. */
const { createPgDatabase } = (await import(
  join(REPO_ROOT, "packages", "server", "dist", "test", "postgres-cluster.js")
)) as { createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> };
const torchMissing =
  spawnSync(PYTHON, ["-c", "import torch"]).status === 0 ? false : needs("torch", `${PYTHON} has no torch`);

describe("Studio shows where a torch job trains", {
  skip: chromiumMissing || torchMissing,
  timeout: 300_000,
}, () => {
  let worker: ChildProcess | null = null;
  let database = { url: "", drop: async () => {} };
  let model = "";
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-torch-home",
    project: { source: TEST_MODEL_TRAINER.replace("seed: 1,", 'seed: 1,\n  backend: "torch",') },
    async startServer(home) {
      database = await createPgDatabase();
      model = await createTestModel();
      return startTestServer({
        home,
        args: [
          ...["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`],
          ...["--database-url", database.url, "--workers", "0", "--job-poll-ms", "100"],
        ],
      });
    },
    async beforeStudio(s) {
      jobId = await s.submitJob();
    },
  });
  // After the session's own hooks (Studio and the server stopped): the worker, then the database.
  after(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      worker.kill("SIGTERM");
      await new Promise((r) => worker!.once("exit", r));
    }
    await database.drop();
  });

  test("a queued torch job says why it waits; trained, it shows torch · cpu and its memory", async () => {
    const page = await session.open(`jobs/${jobId}`);
    const waiting = page.getByTestId("queued-reason");
    await waiting.waitFor();
    assert.match(
      (await waiting.textContent()) ?? "",
      /^Waiting: no worker offers the torch backend: start one with `svc worker --backend torch`$/,
    );
    assert.equal(await page.getByTestId("backend").textContent(), "torch");
    await maybeScreenshot(page, "torch-queued");

    worker = spawn(
      process.execPath,
      [
        SVC_BIN,
        "worker",
        ...["--database-url", database.url, "--data-dir", session.server.dataDir],
        ...["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`, "--job-poll-ms", "100"],
        ...["--backend", "torch", "--python", PYTHON],
      ],
      { env: cliEnv(session.home, null), stdio: "ignore" },
    );
    await page.getByTestId("backend").getByText("torch · cpu").waitFor({ timeout: 120_000 });
    await page.getByText("completed").first().waitFor({ timeout: 120_000 });
    assert.match((await page.getByTestId("memory").textContent()) ?? "", /^\d+(\.\d)? (MB|GB)$/);
    assert.equal(await page.getByTestId("queued-reason").count(), 0);
    await maybeScreenshot(page, "torch-trained");
    assert.deepEqual(session.browser.pageErrors, []);
  });
});
