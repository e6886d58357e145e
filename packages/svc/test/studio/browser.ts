// Debian's Chromium driven by playwright-core, with a fresh profile per launch,
// and the session most browser tests open it on: a real `svc server` and a
// `svc dev` (Studio) on a temporary project. Never a downloaded browser: tests
// skip with a reason when /usr/bin/chromium is absent.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { needs } from "@svc/engine/testing";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import {
  cliEnv,
  runSvc,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "../cli/harness.js";
import { makeProject, type StudioProcess, startStudio, TRAINER_SOURCE } from "./studio-process.js";

export const CHROMIUM_PATH = "/usr/bin/chromium";
export const chromiumMissing = existsSync(CHROMIUM_PATH)
  ? false
  : needs("Chromium", `${CHROMIUM_PATH} is not installed`);

const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export interface StudioBrowser {
  context: BrowserContext;
  page: Page;
  /** Uncaught page errors seen so far (a test fails on any). */
  pageErrors: string[];
  close: () => Promise<void>;
}

export async function launchStudioBrowser(
  options: { colorScheme?: "light" | "dark" } = {},
): Promise<StudioBrowser> {
  const profile = await mkdtemp(join(tmpdir(), "svc-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 860 },
    colorScheme: options.colorScheme ?? "light",
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  return {
    context,
    page,
    pageErrors,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Screenshots go to SVC_STUDIO_SHOTS when set (for looking at the UI while building it). */
export async function maybeScreenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SVC_STUDIO_SHOTS;
  if (dir) await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

/** Studio's default trainer on the tiny test model. */
export const TEST_MODEL_TRAINER = TRAINER_SOURCE.replace(
  '"svc/pico-llama"',
  `"${TEST_MODEL}" as "svc/pico-llama"`,
);

/**
 * Polls probe every 200 ms until it gives a truthy value. A probe that throws
 * (a file not written yet, a page mid-navigation) is polled again; on timeout
 * its last error is part of the message.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    const v = await probe().catch((err: unknown) => {
      lastError = err;
      return null;
    });
    if (v) return v;
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}${lastError ? ` (the probe last failed: ${String(lastError)})` : ""}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The points a chart line (data-testid) draws: its data-points, 0 where it never appears. */
export async function chartPoints(page: Page, testId: string): Promise<number> {
  const value = await page
    .getByTestId(testId)
    .getAttribute("data-points")
    .catch(() => null);
  return Number(value ?? 0);
}

export interface StudioSession {
  home: string;
  projectDir: string;
  server: TestServer;
  studio: StudioProcess;
  browser: StudioBrowser;
  /** `svc start --detach` in the project against the server: the submitted job's id. */
  submitJob(): Promise<string>;
  /** submitJob, then `svc jobs follow` until the job has finished: its id. */
  finishJob(): Promise<string>;
  /** The browser's page at Studio's `#/<route>`. */
  open(route: string): Promise<Page>;
}

/**
 * Before the enclosing describe's tests: a server (startTestModelServer unless
 * startServer is given), the project, `beforeStudio` (e.g. submitJob), Studio
 * against the server with the test model admitted, and Chromium; all stopped after.
 */
export function studioInBrowser(options: {
  homePrefix: string;
  project: Parameters<typeof makeProject>[0];
  startServer?: (home: string) => Promise<TestServer>;
  beforeStudio?: (session: StudioSession) => Promise<void>;
}): StudioSession {
  const session = {
    async submitJob() {
      const started = await runSvc(["start", "--detach"], {
        cwd: session.projectDir,
        env: cliEnv(session.home, session.server.apiUrl),
      });
      assert.equal(started.code, 0, started.stderr);
      const submitted = /^job (\S+) submitted/m.exec(started.stdout);
      assert.ok(submitted, started.stdout);
      return submitted[1];
    },
    async finishJob() {
      const jobId = await session.submitJob();
      const followed = await runSvc(["jobs", "follow", jobId], {
        cwd: session.projectDir,
        env: cliEnv(session.home, session.server.apiUrl),
      });
      assert.equal(followed.code, 0, followed.stderr);
      return jobId;
    },
    async open(route: string) {
      const { page } = session.browser;
      await page.goto(`http://localhost:${session.studio.port}/#/${route}`);
      return page;
    },
  } as StudioSession;
  before(async () => {
    session.home = await tempDir(options.homePrefix);
    session.server = await (options.startServer ?? startTestModelServer)(session.home);
    session.projectDir = (await makeProject(options.project)).projectDir;
    await options.beforeStudio?.(session);
    session.studio = await startStudio({
      projectDir: session.projectDir,
      home: session.home,
      env: { SVC_CLOUD_API_URL: session.server.apiUrl, SVC_EXTRA_MODELS: TEST_MODEL },
    });
    session.browser = await launchStudioBrowser();
  });
  after(async () => {
    await session.browser?.close();
    await session.studio?.stop();
    await session.server?.stop();
  });
  return session;
}
