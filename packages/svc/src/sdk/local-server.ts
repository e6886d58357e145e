// The local server svc starts on demand (DESIGN §4): `svc server` detached, its
// output in ~/.svc/server/server.log, and ~/.svc/server/server.json naming its
// pid and URLs. The server writes that file once it listens and removes it on a
// clean exit (commands/server.ts), so a file whose pid is gone marks a server
// that died without exiting: kill -9, the OOM killer, a power cut.
import { spawn } from "node:child_process";
import { appendFileSync, closeSync, openSync, readFileSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  cloudApiUrl,
  isHealthy,
  localApiUrl,
  localServerPorts,
  svcBinPath,
  svcHomeDir,
  usesRemoteCloudApi,
} from "./config.js";
import { writeJsonFileAtomically } from "./json-file.js";

/** What server.json holds. */
export interface LocalServerRecord {
  pid: number;
  apiUrl: string;
  edgeUrl: string;
  startedAt: string;
}

/** The local server's data directory, log and pid/port file. */
export function localServerPaths(): { dir: string; log: string; record: string } {
  const dir = join(svcHomeDir(), "server");
  return { dir, log: join(dir, "server.log"), record: join(dir, "server.json") };
}

/** The pid/port file and whether its process still runs ("stale": it died without a clean exit). */
export async function readLocalServerRecord(): Promise<{ record: LocalServerRecord; stale: boolean } | null> {
  let value: Partial<LocalServerRecord>;
  try {
    value = JSON.parse(await readFile(localServerPaths().record, "utf8"));
  } catch {
    return null;
  }
  if (!Number.isInteger(value?.pid) || (value.pid as number) <= 0) return null;
  const record: LocalServerRecord = {
    pid: value.pid as number,
    apiUrl: String(value.apiUrl ?? ""),
    edgeUrl: String(value.edgeUrl ?? ""),
    startedAt: String(value.startedAt ?? ""),
  };
  return { record, stale: !isServerProcess(record.pid) };
}

export async function writeLocalServerRecord(record: LocalServerRecord): Promise<void> {
  await mkdir(localServerPaths().dir, { recursive: true });
  await writeJsonFileAtomically(localServerPaths().record, record);
}

/** Removes the file when it still names `pid` (a newer server may have replaced it). */
export async function removeLocalServerRecord(pid: number): Promise<void> {
  const current = await readLocalServerRecord();
  if (current?.record.pid === pid) await rm(localServerPaths().record, { force: true });
}

/** Appends one line to the server log: what the CLI saw happen to the server from outside. */
export function noteInServerLog(line: string): void {
  try {
    appendFileSync(localServerPaths().log, `svc: ${new Date().toISOString()} ${line}\n`);
  } catch {
    // the log is a courtesy; never fail a command over it
  }
}

export interface LocalServerStatus {
  url: string;
  healthy: boolean;
  /** pid from server.json, when that process is alive. */
  pid: number | null;
  /** pid of a server.json left behind by a server that died without a clean exit. */
  stalePid: number | null;
  log: string;
}

export async function localServerStatus(): Promise<LocalServerStatus> {
  const found = await readLocalServerRecord();
  const url = localApiUrl();
  return {
    url,
    healthy: await isHealthy(url),
    pid: found && !found.stale ? found.record.pid : null,
    stalePid: found?.stale ? found.record.pid : null,
    log: localServerPaths().log,
  };
}

export interface EnsureLocalServerOptions {
  timeoutMs?: number;
  onStarting?: (info: { url: string; log: string }) => void;
  /** A server.json was left by a server that died without a clean exit; it is removed and noted in the log. */
  onStale?: (info: { pid: number; startedAt: string; log: string }) => void;
}

/**
 * Makes sure a cloud API answers. With SVC_CLOUD_API_URL set this does nothing;
 * otherwise a missing local server is started detached. Resolves with the pid
 * it started, or null when one already answered.
 */
export async function ensureLocalServer(
  options: EnsureLocalServerOptions = {},
): Promise<{ startedPid: number | null }> {
  if (usesRemoteCloudApi()) return { startedPid: null };
  const url = cloudApiUrl();
  if (await isHealthy(url)) return { startedPid: null };
  const paths = localServerPaths();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const found = await readLocalServerRecord();
  if (found?.stale) {
    const { pid, startedAt } = found.record;
    noteInServerLog(
      `the local server pid ${pid} (started ${startedAt}) is gone without a clean exit: killed (kill -9, the OOM killer) or crashed; starting a new one`,
    );
    await rm(paths.record, { force: true });
    options.onStale?.({ pid, startedAt, log: paths.log });
  } else if (
    found &&
    (await waitHealthy(url, Math.min(timeoutMs, 15_000), () => isServerProcess(found.record.pid)))
  ) {
    // A server another command started is still coming up.
    return { startedPid: null };
  }
  options.onStarting?.({ url, log: paths.log });
  await mkdir(paths.dir, { recursive: true });
  const logFd = openSync(paths.log, "a");
  const { api, edge } = localServerPorts();
  const args = [svcBinPath(), "server"];
  if (api !== null) args.push("--port", String(api));
  if (edge !== null) args.push("--edge-port", String(edge));
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ["ignore", logFd, logFd],
    env: { ...process.env, SVC_SERVER_BACKGROUND: "1" },
  });
  closeSync(logFd);
  let exited: number | null = null;
  child.once("exit", (code, signal) => {
    exited = code ?? 1;
    // A server can log its own exit except for SIGKILL; while this process lives it says so for it.
    if (signal)
      noteInServerLog(
        `the local server pid ${child.pid} was killed by ${signal}${signal === "SIGKILL" ? " (kill -9 or the OOM killer)" : ""}`,
      );
  });
  child.unref();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await isHealthy(url)) return { startedPid: child.pid ?? null };
    if (exited !== null) {
      // Another process may have won the race for the port; its server counts.
      if (await isHealthy(url)) return { startedPid: null };
      throw new Error(`the local server exited (code ${exited}); see ${paths.log}:\n${logTail(paths.log)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the local server did not answer on ${url} within ${timeoutMs / 1000}s; see ${paths.log}`);
}

/** Stops the background server named by server.json. Resolves false when none was running. */
export async function stopLocalServer(timeoutMs = 15_000): Promise<boolean> {
  const paths = localServerPaths();
  const found = await readLocalServerRecord();
  if (!found || found.stale) {
    await rm(paths.record, { force: true });
    return false;
  }
  const { pid } = found.record;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && isAlive(pid)) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) process.kill(pid, "SIGKILL");
  await rm(paths.record, { force: true });
  return true;
}

async function waitHealthy(url: string, timeoutMs: number, stillAlive: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && stillAlive()) {
    if (await isHealthy(url)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Alive and, where /proc tells, still an svc server (a recycled pid is not). */
function isServerProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("server");
  } catch {
    return true;
  }
}

function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
