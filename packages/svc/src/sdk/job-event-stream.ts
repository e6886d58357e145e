// Follows a job's event stream to its `end`: resumes with Last-Event-ID after a
// dropped connection, waits a jittered backoff between attempts, treats a stream
// that stays silent (not even a ping) for idleTimeoutMs as dead, and gives up at
// once on answers that retrying cannot fix (401, 403, 404, 400). When no
// connection succeeds for giveUpMs it gives up with ApiUnreachableError; a
// `recovery` (api-recovery.ts) may restore the API in between (restart the
// local server) and reports the outage.
import type { JobEvent } from "@svc/wire";
import {
  ApiUnreachableError,
  defaultGiveUpMs,
  defaultIdleTimeoutMs,
  type StreamRecovery,
} from "./api-recovery.js";
import { type BackoffOptions, backoffDelay, sleep } from "./backoff.js";
import { CloudApiError } from "./client.js";
import type { CloudApi } from "./cloud-api.js";
import { readServerSentEvents } from "./server-sent-events.js";

export interface JobEventStreamOptions {
  client: Pick<CloudApi, "openJobEvents">;
  jobId: string;
  signal?: AbortSignal;
  /** Silence longer than this (no bytes at all) drops the connection and reconnects. Default: defaultIdleTimeoutMs(). */
  idleTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** Time without a successful connection before giving up. Default: defaultGiveUpMs(). */
  giveUpMs?: number;
  /** Restores or reports on the API between attempts (apiRecovery). */
  recovery?: StreamRecovery;
  /** Resume after this event id instead of from the first event. */
  lastEventId?: string;
  onReconnect?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

export interface ReceivedJobEvent {
  id: string | undefined;
  event: JobEvent;
}

const FATAL_STATUSES = new Set([400, 401, 403, 404]);

export class JobEventStreamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobEventStreamError";
  }
}

class IdleTimeout extends Error {}

/** Yields every job event up to (not including) `end`, in order, exactly once. */
export async function* streamJobEvents(options: JobEventStreamOptions): AsyncGenerator<ReceivedJobEvent> {
  const idleTimeoutMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs();
  const giveUpMs = options.giveUpMs ?? defaultGiveUpMs();
  let lastEventId = options.lastEventId;
  let failures = 0;
  /** When the current run of failed attempts began; null while connected. */
  let failingSince: number | null = null;
  for (;;) {
    options.signal?.throwIfAborted();
    const connection = new AbortController();
    const onAbort = () => connection.abort(options.signal!.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => connection.abort(new IdleTimeout()), idleTimeoutMs);
    };
    const disarm = () => clearTimeout(timer);
    let reason: string;
    try {
      arm();
      const res = await options.client.openJobEvents(options.jobId, {
        lastEventId,
        signal: connection.signal,
      });
      if (!res.body) throw new JobEventStreamError("the event stream answered without a body");
      failingSince = null;
      options.recovery?.connected(lastEventId);
      for await (const frame of readServerSentEvents(res.body, { onActivity: arm })) {
        if (frame.id !== undefined) lastEventId = frame.id;
        if (frame.event === "ping") continue;
        if (frame.event === "end") return;
        let event: JobEvent;
        try {
          event = JSON.parse(frame.data) as JobEvent;
        } catch {
          if (frame.event === "message") continue;
          throw new JobEventStreamError(`event ${frame.event} carried invalid JSON`);
        }
        if (frame.event === "message") {
          // Unnamed frames count only when their payload names its type.
          if (typeof event?.type !== "string" || (event.type as string) === "ping") continue;
          if (event.type === "end") return;
        } else if (typeof event !== "object" || event === null) {
          throw new JobEventStreamError(`event ${frame.event} carried no JSON object`);
        } else if (typeof event.type !== "string") {
          event = { ...(event as object), type: frame.event } as JobEvent;
        }
        failures = 0;
        // The consumer may take its time (callbacks); that is not server silence.
        disarm();
        yield { id: frame.id, event };
        arm();
      }
      reason = "the stream closed before its end event";
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (err instanceof CloudApiError && FATAL_STATUSES.has(err.status)) throw err;
      if (err instanceof JobEventStreamError) throw err;
      reason =
        connection.signal.reason instanceof IdleTimeout
          ? `no data for ${idleTimeoutMs} ms`
          : (err as Error).message;
    } finally {
      disarm();
      options.signal?.removeEventListener("abort", onAbort);
      connection.abort();
    }
    failures++;
    failingSince ??= Date.now();
    const giveUp = () =>
      new ApiUnreachableError(
        options.jobId,
        apiUrlOf(options.client),
        giveUpMs,
        options.recovery?.lastProbe ?? reason,
      );
    if (Date.now() - failingSince >= giveUpMs) throw giveUp();
    if ((await options.recovery?.recover(reason)) === "now") {
      options.onReconnect?.({ attempt: failures, delayMs: 0, reason });
      continue;
    }
    const giveUpInMs = failingSince + giveUpMs - Date.now();
    if (giveUpInMs <= 0) throw giveUp();
    const delayMs = Math.min(backoffDelay(failures - 1, options.backoff), giveUpInMs);
    options.onReconnect?.({ attempt: failures, delayMs, reason });
    options.recovery?.waiting({ attempt: failures, delayMs, giveUpInMs });
    await sleep(delayMs, options.signal);
  }
}

function apiUrlOf(client: object): string {
  return "baseUrl" in client && typeof client.baseUrl === "string" ? client.baseUrl : "(unknown)";
}
