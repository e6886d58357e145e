// Studio's own /api (served by `svc dev`, packages/svc/src/studio) as the page
// (packages/studio) reads it: the bodies both sides type, the headers they
// name, and the pattern of a job id in `svc start`'s output. An /api route that
// forwards a cloud route answers with that route's `Answer<"name">`
// (routes.ts): the proxy handler `satisfies` it and the page fetches it, so only
// the /api routes that are Studio's own have a body here.

import type { ErrorBody } from "./common.js";
import type { ToolCall } from "./tools.js";

/** GET /api/credentials: what the header's identity line needs; the cloud bearer token never leaves `svc dev`. */
export interface StudioIdentityBody {
  mode: "anonymous" | "oauth";
  orgSlug: string;
  projectSlug: string | null;
  /** The cloud API host, or null when the CLI points at the default (production) endpoint. */
  apiHost: string | null;
  /** True when this call minted anonymous credentials because none existed. */
  minted: boolean;
}

/** GET /api/connection: whether the cloud API Studio talks to is answering (the page's banner). */
export interface StudioConnectionBody {
  apiUrl: string;
  reachable: boolean;
  /** Why not, in a few words ("connection refused"); null when reachable. */
  reason: string | null;
  /** True for the local server svc starts (and restarts) itself. */
  local: boolean;
  /** The local server's log; null for a remote API. */
  log: string | null;
}

/** GET /api/manifest: the trainer the project's src/svc/index.ts declares, if any. */
export interface StudioManifestBody {
  trainer: { name: string } | null;
}

/**
 * One line of POST /api/inference/chat's NDJSON answer: a text piece, the
 * tool calls of an answer with tools, or the error that broke the stream after
 * it started (before that, errors keep their HTTP status).
 */
export type StudioChatLine = { delta: string } | { toolCalls: ToolCall[] } | ErrorBody;

/** The per-run token the page sends on every /api request (docs/studio.md#security). */
export const STUDIO_TOKEN_HEADER = "X-Svc-Studio-Token";
/** POST /api/train's answer names the job `svc start` submitted, once its output shows it. */
export const JOB_ID_HEADER = "X-Svc-Job-Id";
/** The last event id an event stream resumes after (the SSE standard's header; ?lastEventId= where no header can be set). */
export const LAST_EVENT_ID_HEADER = "Last-Event-ID";
export const LAST_EVENT_ID_QUERY = "lastEventId";

/** `job <uuid>` as `svc start` prints it (other ids, e.g. a dataset's, may come first); group 1 is the id. */
export const START_OUTPUT_JOB_ID = /\bjob ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;
