// The one error type of the cloud API. Route code throws it; the central
// handler turns it into { error: { message, code } } with its status.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorBody } from "../wire.js";

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, code = "invalid_request") => new ApiError(400, code, message);
export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (message: string, code = "conflict") => new ApiError(409, code, message);

export function errorBody(message: string, code: string): ErrorBody {
  return { error: { message, code } };
}

/** Central error handler for the cloud API app. */
export function handleApiError(error: Error, c: Context): Response {
  if (error instanceof ApiError) return c.json(errorBody(error.message, error.code), error.status);
  console.error(`svc server: ${c.req.method} ${c.req.path} failed:`, error);
  return c.json(errorBody("internal server error", "internal_error"), 500);
}
