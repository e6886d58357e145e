// One error shape for every Studio /api answer: { error: { message, code } } with
// the upstream HTTP status when the cloud API said no.
import type { ErrorBody } from "@svc/wire";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { CloudApiError } from "../sdk/client.js";
import { CredentialsFileError } from "../sdk/credentials.js";
import { ManifestBuildError } from "../sdk/manifest.js";
import { MissingProjectStateError, ProjectStateFileError } from "../sdk/project-state.js";

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { message, code } };
}

/** An error Studio raises itself (bad input at the edge, missing local state). */
export class StudioError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "StudioError";
  }
}

export function errorStatus(err: unknown): { status: ContentfulStatusCode; code: string; message: string } {
  if (err instanceof StudioError) return { status: err.status, code: err.code, message: err.message };
  if (err instanceof CloudApiError) {
    // Status 0 means the cloud API did not answer at all.
    const status = (err.status >= 400 && err.status <= 599 ? err.status : 502) as ContentfulStatusCode;
    return { status, code: err.code, message: err.message };
  }
  if (err instanceof MissingProjectStateError)
    return { status: 409, code: "missing_project_state", message: err.message };
  if (err instanceof ManifestBuildError)
    return { status: 422, code: "manifest_build_failed", message: err.message };
  if (err instanceof CredentialsFileError || err instanceof ProjectStateFileError) {
    return { status: 500, code: "invalid_local_file", message: err.message };
  }
  return { status: 500, code: "internal", message: err instanceof Error ? err.message : String(err) };
}

export function errorResponse(c: Context, err: unknown): Response {
  const { status, code, message } = errorStatus(err);
  return c.json(errorBody(code, message), status);
}
