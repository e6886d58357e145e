// Where the cloud API is, and the local server that stands in for it (DESIGN §4):
// with SVC_CLOUD_API_URL unset and nothing answering on 127.0.0.1:4100, commands
// that need the backend start `svc server` in the background and wait for it.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const DEFAULT_CLOUD_API_URL = "http://127.0.0.1:4100";

export function cloudApiUrl(): string {
  const fromEnv = process.env.SVC_CLOUD_API_URL?.trim();
  return (fromEnv || DEFAULT_CLOUD_API_URL).replace(/\/+$/, "");
}

/** True for the local default endpoint (the "production endpoint" whose host the Studio header hides). */
export function isDefaultCloudApi(url: string): boolean {
  return url.replace(/\/+$/, "") === DEFAULT_CLOUD_API_URL;
}

/** ~/.svc, from HOME so tests can point it at a temporary directory. */
export function svcHomeDir(): string {
  return join(process.env.HOME || homedir(), ".svc");
}

/** The local server's data directory, log and pid file. */
export function localServerPaths(): { dir: string; log: string; pid: string } {
  const dir = join(svcHomeDir(), "server");
  return { dir, log: join(dir, "server.log"), pid: join(dir, "server.pid") };
}

/** Root of this package (packages/svc), from dist/src/sdk/config.js. */
export function svcPackageDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
}

/** The `svc` executable script (packages/svc/bin/svc.js); run it with process.execPath. */
export function svcBinPath(): string {
  return join(svcPackageDir(), "bin", "svc.js");
}

export async function isHealthy(baseUrl: string, timeoutMs = 1500): Promise<boolean> {
  try {
    const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export interface LocalServerStatus {
  url: string;
  healthy: boolean;
  /** pid from the pid file, when that process is alive. */
  pid: number | null;
  log: string;
}

export async function localServerStatus(): Promise<LocalServerStatus> {
  const paths = localServerPaths();
  const pid = await readLivePid(paths.pid);
  return { url: DEFAULT_CLOUD_API_URL, healthy: await isHealthy(DEFAULT_CLOUD_API_URL), pid, log: paths.log };
}

/**
 * Makes sure a cloud API answers. With SVC_CLOUD_API_URL set this only checks it;
 * otherwise a missing local server is started detached (logs in ~/.svc/server/server.log).
 */
export async function ensureLocalServer(
  options: { timeoutMs?: number; onStarting?: (info: { url: string; log: string }) => void } = {},
): Promise<void> {
  const url = cloudApiUrl();
  if (process.env.SVC_CLOUD_API_URL?.trim()) return;
  if (await isHealthy(url)) return;
  const paths = localServerPaths();
  options.onStarting?.({ url, log: paths.log });
  await mkdir(paths.dir, { recursive: true });
  const logFd = openSync(paths.log, "a");
  const child = spawn(process.execPath, [svcBinPath(), "server"], {
    detached: true,
    stdio: ["ignore", logFd, logFd],
    env: { ...process.env, SVC_SERVER_BACKGROUND: "1" },
  });
  closeSync(logFd);
  let exited: number | null = null;
  child.once("exit", (code) => {
    exited = code ?? 1;
  });
  child.unref();
  if (child.pid) await writeFile(paths.pid, `${child.pid}\n`);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (await isHealthy(url)) return;
    if (exited !== null) {
      // Another process may have won the race for the port; its server counts.
      if (await isHealthy(url)) return;
      throw new Error(`the local server exited (code ${exited}); see ${paths.log}:\n${logTail(paths.log)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `the local server did not answer on ${url} within ${(options.timeoutMs ?? 60_000) / 1000}s; see ${paths.log}`,
  );
}

/** Stops the background server named by the pid file. Resolves false when none was running. */
export async function stopLocalServer(timeoutMs = 15_000): Promise<boolean> {
  const paths = localServerPaths();
  const pid = await readLivePid(paths.pid);
  if (pid === null) {
    await rm(paths.pid, { force: true });
    return false;
  }
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && isAlive(pid)) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) process.kill(pid, "SIGKILL");
  await rm(paths.pid, { force: true });
  return true;
}

async function readLivePid(file: string): Promise<number | null> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return null;
  }
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
