// The browser side of the loopback API: every call carries the per-launch token
// from the page's meta tag; non-2xx answers become StudioApiError with the
// server's uniform { error: { message, code } } body.
import type { ErrorBody } from "@svc/server/wire";

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

async function errorFrom(res: Response): Promise<StudioApiError> {
  let body: Partial<ErrorBody> | null = null;
  try {
    body = (await res.json()) as Partial<ErrorBody>;
  } catch {
    // not JSON: fall through to the status line
  }
  const message = body?.error?.message ?? `${res.status} ${res.statusText}`;
  return new StudioApiError(res.status, body?.error?.code ?? "http_error", message);
}

/** fetch with the Studio token; throws StudioApiError on non-2xx. */
export async function studioFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("X-Svc-Studio-Token", studioToken);
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

export function jobEventsUrl(jobId: string): string {
  return `/api/jobs/${encodeURIComponent(jobId)}/events?studioToken=${encodeURIComponent(studioToken)}`;
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
