// Studio's job detail for a job on the torch backend, in Chromium against a
// real `svc dev`, `svc server` (PostgreSQL, no in-process runner) and `svc
// worker --backend torch` (Debian's python3-torch, CPU): while no torch
// worker runs, the page says why the job waits; once one has trained it, the
// Metadata shows the backend with its device and the peak memory it reported.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { after, describe, test } from "node:test";
import pg from "pg";
import { cliEnv, createTestModel, startTestServer, TEST_MODEL } from "../cli/harness.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER } from "./browser.js";
import { SVC_BIN } from "./studio-process.js";

const PYTHON = process.env.SVC_PYTHON ?? "/usr/bin/python3";
const PG_ADMIN_URL = process.env.SVC_TEST_PG_URL ?? "postgres://root@127.0.0.1:5432/test";
const torchMissing =
  spawnSync(PYTHON, ["-c", "import torch"]).status === 0 ? false : `${PYTHON} has no torch`;

describe("Studio shows where a torch job trains", {
  skip: chromiumMissing || torchMissing,
  timeout: 300_000,
}, () => {
  let worker: ChildProcess | null = null;
  let databaseUrl = "";
  const database = `svc_studio_torch_${process.pid}`;
  let model = "";
  let jobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-torch-home",
    project: { source: TEST_MODEL_TRAINER.replace("seed: 1,", 'seed: 1,\n  backend: "torch",') },
    async startServer(home) {
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`create database ${database}`);
      await admin.end();
      databaseUrl = PG_ADMIN_URL.replace(/\/[^/]*$/, `/${database}`);
      model = await createTestModel();
      return startTestServer({
        home,
        args: [
          ...["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`],
          ...["--database-url", databaseUrl, "--workers", "0", "--job-poll-ms", "100"],
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
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
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
        ...["--database-url", databaseUrl, "--data-dir", session.server.dataDir],
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
