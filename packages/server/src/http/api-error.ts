// The one error type of the cloud API. Route code throws it; the central
// handler turns it into { error: { message, code } } with its status.

import type { ErrorBody } from "@svc/wire";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * Characters a message must never carry raw: controls (newline, NUL…), format
 * characters (bidi overrides and marks, zero-width ones), line and paragraph
 * separators, private-use and unassigned code points, lone surrogates. In a
 * log line or a terminal they forge lines, reorder text or hide it.
 */
const UNSAFE = /[\p{C}\p{Zl}\p{Zp}]/gu;
const SHORT_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

const escapeChar = (char: string): string =>
  SHORT_ESCAPES[char] ??
  // by UTF-16 unit, as JSON writes escapes: a supplementary code point becomes its surrogate pair
  char
    .split("")
    .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)
    .join("");

/** The text with every unsafe character written as an escape (\n, \u202e). */
export function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** At most this many characters of user input go into a message. */
const QUOTED_MAX = 100;

/**
 * User input as a message shows it: in double quotes, `"` and `\` escaped,
 * unsafe characters escaped, cut after QUOTED_MAX characters (the length said).
 */
export function quoteInput(value: string): string {
  const chars = [...value];
  const shown = chars.length > QUOTED_MAX ? `${chars.slice(0, QUOTED_MAX).join("")}…` : value;
  const quoted = `"${escapeUnsafe(shown.replace(/["\\]/g, (c) => `\\${c}`))}"`;
  return chars.length > QUOTED_MAX ? `${quoted} (${chars.length} characters)` : quoted;
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    // Every message passes here: whatever input a route interpolated, none of it reaches a client or a log raw.
    super(escapeUnsafe(message));
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, code = "invalid_request") => new ApiError(400, code, message);
export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (message: string, code = "conflict") => new ApiError(409, code, message);

/** The error body; its message escaped like every ApiError's, for messages built outside one. */
export function errorBody(message: string, code: string): ErrorBody {
  return { error: { message: escapeUnsafe(message), code } };
}

/** Central error handler for the cloud API app. */
export function handleApiError(error: Error, c: Context): Response {
  if (error instanceof ApiError) return c.json(errorBody(error.message, error.code), error.status);
  console.error(`svc server: ${c.req.method} ${c.req.path} failed:`, error);
  return c.json(errorBody("internal server error", "internal_error"), 500);
}
