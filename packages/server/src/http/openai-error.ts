// OpenAI's error shape, { error: { message, type, param, code } }: the edge's,
// and that of every route of the OpenAI API that the cloud API serves (files, fine-tuning jobs,
// models, chat completions, responses), the bearer and rate-limit refusals before them
// included. Route code throws ApiError as everywhere else; `param` is the
// field a 400 names first in quotes ("method.type", "messages[0].content"),
// or what an OpenAiError says.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError } from "./api-error.js";

/** An ApiError whose `param` is given rather than read from the message (null: none). */
export class OpenAiError extends ApiError {
  constructor(
    status: ContentfulStatusCode,
    code: string,
    message: string,
    readonly param: string | null,
  ) {
    super(status, code, message);
  }
}

/** A 400 in OpenAI's shape naming `param` (code "invalid_request" unless given): the OpenAI routes' refusal. */
export const refuseParam = (param: string, message: string, code = "invalid_request"): OpenAiError =>
  new OpenAiError(400, code, message, param);

/** The paths of OpenAI's API: their errors take OpenAI's shape (svc's own model pulls keep svc's). */
const OPENAI_PATHS = /^\/v1\/(files|fine_tuning|chat\/completions|responses|models)(\/|$)/;

export const isOpenAiPath = (path: string): boolean =>
  OPENAI_PATHS.test(path) && !path.startsWith("/v1/models/pull");

/** OpenAI's error `type` for a status, as OpenAI sends it (a wrong API key too is an "invalid_request_error"). */
export function openAiErrorType(status: number): string {
  return status >= 500 ? "server_error" : status === 429 ? "requests" : "invalid_request_error";
}

/** The field a refusal names: an OpenAiError's own, else a 400's leading quoted path. */
export function paramOf(error: ApiError): string | null {
  if (error instanceof OpenAiError) return error.param;
  if (error.status !== 400) return null;
  return /^"([^"]+)"/.exec(error.message)?.[1] ?? null;
}

export function openAiErrorResponse(c: Context, error: Error): Response {
  if (!(error instanceof ApiError)) {
    console.error(`svc server: ${c.req.method} ${c.req.path} failed:`, error);
    return c.json(
      {
        error: {
          message: "internal server error",
          type: "server_error",
          param: null,
          code: "internal_error",
        },
      },
      500,
    );
  }
  const body = {
    error: {
      message: error.message,
      type: openAiErrorType(error.status),
      param: paramOf(error),
      code: error.code,
    },
  };
  return c.json(body, error.status);
}

/** OpenAI's 404 for an object id: "No such File object: file-…", naming the path parameter. */
export const noSuch = (what: string, id: string, param = "id") =>
  new OpenAiError(404, "not_found", `No such ${what}: ${id}`, param);
