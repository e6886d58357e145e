// Debian's Chromium driven by playwright-core, with a fresh profile per launch.
// Never a downloaded browser: tests skip with a reason when /usr/bin/chromium is absent.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";
export const chromiumMissing = existsSync(CHROMIUM_PATH) ? false : `${CHROMIUM_PATH} is not installed`;

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
