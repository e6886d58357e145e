// What a client following a job does when the cloud API goes away. One place
// for the timings (docs/cli.md quotes them): the stream counts as dead after
// the server's ping interval plus a margin of silence, a refused or reset
// connection at once. The local server svc started is restarted; a remote API
// is retried with backoff until GIVE_UP_MS have passed without a connection.
import { cloudApiUrl, usesRemoteCloudApi } from "./config.js";
import { ensureLocalServer, localServerPaths } from "./local-server.js";

/** The server's default SSE keep-alive (svc server --sse-keepalive-ms). */
export const SSE_PING_INTERVAL_MS = 15_000;
/** Silence tolerated beyond one ping interval (a busy machine, a slow proxy). */
export const SSE_PING_MARGIN_MS = 10_000;
/** How long a client keeps trying to reach a cloud API that is gone before it gives up. */
export const GIVE_UP_MS = 120_000;

function fromEnv(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** Silence (not even a ping) after which a stream is dropped; SVC_EVENT_IDLE_TIMEOUT_MS overrides. */
export function defaultIdleTimeoutMs(): number {
  return fromEnv("SVC_EVENT_IDLE_TIMEOUT_MS", SSE_PING_INTERVAL_MS + SSE_PING_MARGIN_MS);
}

/** SVC_API_GIVE_UP_MS overrides GIVE_UP_MS (tests). */
export function defaultGiveUpMs(): number {
  return fromEnv("SVC_API_GIVE_UP_MS", GIVE_UP_MS);
}

/** What a follower reports while the API is away; formatApiNotice makes each one line. */
export type ApiNotice =
  | { kind: "lost"; apiUrl: string; reason: string; local: boolean; log: string | null }
  | { kind: "restarted"; pid: number | null; stalePid: number | null }
  | { kind: "restart-failed"; error: string; log: string }
  | { kind: "retrying"; attempt: number; delayMs: number; giveUpInMs: number }
  | { kind: "back"; downMs: number; lastEventId: string | undefined };

export function seconds(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

export function formatApiNotice(n: ApiNotice): string {
  switch (n.kind) {
    case "lost":
      return n.local
        ? `lost the local server at ${n.apiUrl} (${n.reason}); restarting it (log: ${n.log})`
        : `lost the cloud API at ${n.apiUrl} (${n.reason}); retrying`;
    case "restarted":
      return n.pid === null
        ? "the local server answers again"
        : `restarted the local server (pid ${n.pid})${n.stalePid ? `; pid ${n.stalePid} had died without a clean exit` : ""}`;
    case "restart-failed":
      return `could not restart the local server: ${n.error.split("\n")[0]} (log: ${n.log}); retrying`;
    case "retrying":
      return `cloud API unreachable; retry ${n.attempt} in ${seconds(n.delayMs)} (giving up in ${seconds(n.giveUpInMs)})`;
    case "back":
      return `the cloud API is back after ${seconds(n.downMs)}; following the job from ${n.lastEventId ? `event ${n.lastEventId}` : "its first event"}`;
  }
}

/** The API stayed unreachable for the whole give-up time. The job itself is untouched on the server. */
export class ApiUnreachableError extends Error {
  readonly jobId: string;
  constructor(jobId: string, apiUrl: string, giveUpMs: number, reason: string) {
    super(
      `gave up after ${seconds(giveUpMs)}: the cloud API at ${apiUrl} does not answer (${reason}). ` +
        `Job ${jobId} was not cancelled; follow it again with: svc jobs follow ${jobId}`,
    );
    this.name = "ApiUnreachableError";
    this.jobId = jobId;
  }
}

/** How streamJobEvents asks what to do after a dropped connection (job-event-stream.ts). */
export interface StreamRecovery {
  /** "now": the API was restored, reconnect at once; "later": wait the backoff first. */
  recover(reason: string): Promise<"now" | "later">;
  waiting(info: { attempt: number; delayMs: number; giveUpInMs: number }): void;
  connected(lastEventId: string | undefined): void;
  /** What the last health probe found ("connection refused"); null when it answered. */
  readonly lastProbe: string | null;
}

/**
 * The default recovery: probes /healthz after a failure; when the API is down it
 * says so once, restarts the local server when svc owns it, and reports the
 * countdown and the return through onNotice.
 */
export function apiRecovery(onNotice: (notice: ApiNotice) => void): StreamRecovery {
  const apiUrl = cloudApiUrl();
  const local = !usesRemoteCloudApi();
  let downSince: number | null = null;
  let lastProbe: string | null = null;
  return {
    get lastProbe() {
      return lastProbe;
    },
    async recover(streamReason) {
      const down = await probe(apiUrl);
      lastProbe = down;
      if (down === null) return "later";
      if (downSince === null) {
        downSince = Date.now();
        // The probe names the cause (refused, reset, no answer); a silent stream adds how long it was silent.
        const reason = streamReason.startsWith("no data for") ? `${down}; ${streamReason}` : down;
        onNotice({ kind: "lost", apiUrl, reason, local, log: local ? localServerPaths().log : null });
      }
      if (!local) return "later";
      let stalePid: number | null = null;
      try {
        const { startedPid } = await ensureLocalServer({
          onStale: ({ pid }) => {
            stalePid = pid;
          },
        });
        onNotice({ kind: "restarted", pid: startedPid, stalePid });
        return "now";
      } catch (err) {
        onNotice({ kind: "restart-failed", error: (err as Error).message, log: localServerPaths().log });
        return "later";
      }
    },
    waiting(info) {
      if (downSince !== null) onNotice({ kind: "retrying", ...info });
    },
    connected(lastEventId) {
      if (downSince === null) return;
      onNotice({ kind: "back", downMs: Date.now() - downSince, lastEventId });
      downSince = null;
    },
  };
}

/** null when GET /healthz answers 2xx within 2 s; otherwise why not, in a few words. */
export async function probe(apiUrl: string, timeoutMs = 2000): Promise<string | null> {
  try {
    const res = await fetch(`${apiUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok ? null : `health check answered HTTP ${res.status}`;
  } catch (err) {
    if ((err as Error).name === "TimeoutError") return `no answer within ${timeoutMs / 1000}s`;
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code === "ECONNREFUSED") return "connection refused";
    if (code === "ECONNRESET" || code === "UND_ERR_SOCKET") return "connection reset";
    return code ?? (err as Error).message;
  }
}
