// The cloud API client's transport: one request with the bearer token, the
// project scope, a response deadline and the one error shape, so a dead or hung
// server fails with a message that says which (never a silent wait).
import type { ProjectScope } from "@svc/wire";
import type { CloudApiErrorShape } from "./cloud-api.js";

export class CloudApiError extends Error implements CloudApiErrorShape {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "CloudApiError";
    this.status = status;
    this.code = code;
  }
}

export type Query = Record<string, string | undefined>;

/**
 * How long a request waits for the response to begin before the cloud API
 * counts as hung (a dead one fails at once): no command hangs silently on a
 * stopped server. SVC_API_RESPONSE_TIMEOUT_MS overrides it (tests).
 */
export const RESPONSE_TIMEOUT_MS = 60_000;
/** Inference answers after the whole completion (or, streamed, after the prompt's prefill): more time. */
export const INFERENCE_RESPONSE_TIMEOUT_MS = 600_000;
/** A Hub dataset answers once its split is downloaded and checked: a large one takes a while. */
export const HUB_DATASET_RESPONSE_TIMEOUT_MS = 3_600_000;

function responseTimeoutMs(fallback: number): number {
  const n = Number(process.env.SVC_API_RESPONSE_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  scoped?: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Default RESPONSE_TIMEOUT_MS. */
  timeoutMs?: number;
}

/** Where and as whom requests go. */
export interface CloudConnection {
  baseUrl: string;
  token: string | undefined;
  scope: ProjectScope | undefined;
  fetch: typeof fetch;
}

/** Sends one request; resolves with the Response for 2xx and throws CloudApiError otherwise. */
export async function sendRequest(
  conn: CloudConnection,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Response> {
  const url = new URL(conn.baseUrl + path);
  const query: Query = { ...options.query };
  if (options.scoped) {
    if (!conn.scope) {
      throw new CloudApiError(
        0,
        "missing_scope",
        `${method} ${path} needs a project scope (orgSlug, projectSlug)`,
      );
    }
    query.orgSlug = conn.scope.orgSlug;
    query.projectSlug = conn.scope.projectSlug;
  }
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...options.headers };
  if (conn.token) headers.Authorization = `Bearer ${conn.token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) {
    body = options.rawBody;
    headers["Content-Type"] = options.contentType ?? "application/octet-stream";
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] = "application/json";
  }
  const timeoutMs = responseTimeoutMs(options.timeoutMs ?? RESPONSE_TIMEOUT_MS);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
  let res: Response;
  try {
    res = await conn.fetch(url, { method, headers, body, signal });
  } catch (err) {
    if (options.signal?.aborted) throw err;
    if (timeout.signal.aborted)
      throw new CloudApiError(
        0,
        "timeout",
        `the cloud API at ${conn.baseUrl} did not answer ${method} ${path} within ${Math.round(timeoutMs / 1000)}s; it may be hung (see svc server status and its log)`,
      );
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new CloudApiError(
      0,
      "unreachable",
      `cannot reach the cloud API at ${conn.baseUrl}${cause ? ` (${cause})` : ""}: ${(err as Error).message}`,
    );
  } finally {
    clearTimeout(timer);
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => "");
  const parsed = safeParse(text) as { error?: { message?: string; code?: string } } | null;
  const message = parsed?.error?.message ?? (text.trim() || res.statusText || `HTTP ${res.status}`);
  throw new CloudApiError(res.status, parsed?.error?.code ?? `http_${res.status}`, message);
}

/** A 2xx answer's JSON body ({} for an empty one); anything else is a bad_response. */
export async function readJson<T>(res: Response, method: string, path: string): Promise<T> {
  const text = await res.text();
  if (text === "") return {} as T;
  const body = safeParse(text);
  if (body === null)
    throw new CloudApiError(res.status, "bad_response", `${method} ${path}: answer is not JSON`);
  return body as T;
}

/** JSON.parse, or null for text that is not JSON. */
export function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
