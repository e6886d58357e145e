// The browser side of the loopback API: every call carries the per-launch token
// from the page's meta tag; non-2xx answers become StudioApiError with the
// server's uniform { error: { message, code } } body.
import { type ErrorBody, LAST_EVENT_ID_QUERY, STUDIO_TOKEN_HEADER } from "@svc/wire";

export const studioToken: string =
  document.querySelector<HTMLMetaElement>('meta[name="svc-studio-token"]')?.content ?? "";

export class StudioApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Fired when the server no longer knows this page's token: `svc dev` was restarted since the page loaded. */
export const STALE_TOKEN_EVENT = "svc-studio-stale-token";
/** Fired when the header identity may have changed (a run or a first deployment wrote .svc/state.json). */
export const IDENTITY_CHANGED_EVENT = "svc-studio-identity-changed";

async function errorFrom(res: Response): Promise<StudioApiError> {
  let body: Partial<ErrorBody> | null = null;
  try {
    body = (await res.json()) as Partial<ErrorBody>;
  } catch {
    // not JSON: fall through to the status line
  }
  if (res.status === 403 && body?.error?.code === "invalid_studio_token") {
    window.dispatchEvent(new Event(STALE_TOKEN_EVENT));
  }
  const message = body?.error?.message ?? `${res.status} ${res.statusText}`;
  return new StudioApiError(res.status, body?.error?.code ?? "http_error", message);
}

/** fetch with the Studio token; throws StudioApiError on non-2xx. */
export async function studioFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set(STUDIO_TOKEN_HEADER, studioToken);
  if (init.body !== undefined && !headers.has("Content-Type"))
    headers.set("Content-Type", "application/json");
  const res = await fetch(path, { ...init, headers });
  if (!res.ok) throw await errorFrom(res);
  return res;
}

export async function getJson<T>(path: string): Promise<T> {
  return (await (await studioFetch(path)).json()) as T;
}

export async function sendJson<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await studioFetch(path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (res.status === 204 ? undefined : await res.json()) as T;
}

/** `lastEventId` resumes after that event when a new EventSource replaces one that gave up. */
export function jobEventsUrl(jobId: string, lastEventId?: string): string {
  const resume = lastEventId ? `&${LAST_EVENT_ID_QUERY}=${encodeURIComponent(lastEventId)}` : "";
  return `/api/jobs/${encodeURIComponent(jobId)}/events?studioToken=${encodeURIComponent(studioToken)}${resume}`;
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
