// Where the cloud API is (DESIGN §4): SVC_CLOUD_API_URL, or the local server on
// 127.0.0.1:4100 that commands start on demand (local-server.ts).
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const DEFAULT_CLOUD_API_URL = "http://127.0.0.1:4100";

/**
 * Ports of the local server svc starts on demand: 4100 (API) and 4200 (edge), or
 * SVC_LOCAL_API_PORT / SVC_LOCAL_EDGE_PORT, so a second copy (a test, a second
 * HOME) can run beside a user's own without taking its ports.
 */
export function localServerPorts(): { api: number | null; edge: number | null } {
  const port = (name: string) => {
    const raw = process.env[name]?.trim();
    if (!raw) return null;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0 || n > 65535)
      throw new Error(`${name} must be a TCP port (got ${raw})`);
    return n;
  };
  return { api: port("SVC_LOCAL_API_PORT"), edge: port("SVC_LOCAL_EDGE_PORT") };
}

/** The local server's API URL (http://127.0.0.1:4100 unless SVC_LOCAL_API_PORT says otherwise). */
export function localApiUrl(): string {
  const { api } = localServerPorts();
  return api === null ? DEFAULT_CLOUD_API_URL : `http://127.0.0.1:${api}`;
}

/** True when SVC_CLOUD_API_URL names a cloud API; false when svc uses (and may start) the local server. */
export function usesRemoteCloudApi(): boolean {
  return Boolean(process.env.SVC_CLOUD_API_URL?.trim());
}

export function cloudApiUrl(): string {
  const fromEnv = process.env.SVC_CLOUD_API_URL?.trim();
  return (fromEnv || localApiUrl()).replace(/\/+$/, "");
}

/** True for the local default endpoint (the "production endpoint" whose host the Studio header hides). */
export function isDefaultCloudApi(url: string): boolean {
  const u = url.replace(/\/+$/, "");
  return u === DEFAULT_CLOUD_API_URL || u === localApiUrl();
}

/** ~/.svc, from HOME so tests can point it at a temporary directory. */
export function svcHomeDir(): string {
  return join(process.env.HOME || homedir(), ".svc");
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
