// The checks Studio applies to every request (spec, Authentication): a Host
// guard, the per-launch CSRF token, no CORS headers at all, and, as a second
// line of defence behind the token, same-origin mutations.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { STUDIO_TOKEN_HEADER } from "@svc/wire";
import type { MiddlewareHandler } from "hono";
import { errorBody } from "./errors.js";

export { STUDIO_TOKEN_HEADER } from "@svc/wire";
export const STUDIO_TOKEN_QUERY = "studioToken";

/** 32 random bytes, base64url: rotated at every launch of `svc dev`. */
export function createStudioToken(): string {
  return randomBytes(32).toString("base64url");
}

const ALLOWED_HOST = /^(127\.0\.0\.1|localhost)(:\d{1,5})?$/i;

export function isAllowedHost(host: string | undefined): boolean {
  return host !== undefined && ALLOWED_HOST.test(host);
}

/** Constant-time comparison; the length check leaks nothing (the token size is public). */
export function tokenMatches(given: string | undefined | null, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(expected, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Only the job-event stream may carry the token in the query (EventSource cannot set headers). */
export function acceptsQueryToken(method: string, path: string): boolean {
  return method === "GET" && /^\/api\/jobs\/[^/]+\/events$/.test(path);
}

/**
 * The authority the request names: in an absolute-form target
 * ("GET http://evil.com/api/models"), Node's adapter builds the URL from the
 * target, not from Host, so the URL's host is what the request addressed.
 */
const targetAuthority = (url: string): string | undefined => {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
};

/**
 * 403 for any Host other than 127.0.0.1 / localhost (DNS-rebinding guard), and
 * for an absolute-form target with any other authority, before any HTML is served.
 */
export const hostGuard: MiddlewareHandler = async (c, next) => {
  if (!isAllowedHost(c.req.header("host")) || !isAllowedHost(targetAuthority(c.req.url))) {
    return c.json(errorBody("forbidden_host", "Studio answers only to Host 127.0.0.1 or localhost"), 403);
  }
  await next();
};

export function studioTokenGuard(token: string): MiddlewareHandler {
  return async (c, next) => {
    const fromHeader = c.req.header(STUDIO_TOKEN_HEADER);
    const fromQuery = acceptsQueryToken(c.req.method, c.req.path)
      ? c.req.query(STUDIO_TOKEN_QUERY)
      : undefined;
    if (!tokenMatches(fromHeader, token) && !tokenMatches(fromQuery, token)) {
      return c.json(
        errorBody("invalid_studio_token", `missing or stale ${STUDIO_TOKEN_HEADER}; reload the Studio page`),
        403,
      );
    }
    await next();
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A mutation from a browser must come from Studio's own page: a Sec-Fetch-Site
 * other than same-origin, or an Origin other than this Host's, is 403 even
 * with a valid token (a leaked token cannot be replayed from another site).
 * Clients that send neither header (curl, the SDK) are judged by the token alone.
 */
export const sameOriginMutations: MiddlewareHandler = async (c, next) => {
  if (!SAFE_METHODS.has(c.req.method)) {
    const site = c.req.header("sec-fetch-site");
    const origin = c.req.header("origin");
    const host = c.req.header("host");
    const sameOrigin =
      origin === undefined || (host !== undefined && origin.toLowerCase() === `http://${host.toLowerCase()}`);
    if ((site !== undefined && site !== "same-origin") || !sameOrigin) {
      return c.json(
        errorBody(
          "cross_origin_request",
          "Studio accepts changes only from its own page (Origin / Sec-Fetch-Site)",
        ),
        403,
      );
    }
  }
  await next();
};

/** Same-origin only: strip any Access-Control-* header a handler might have set, and harden the page. */
export const noCrossOrigin: MiddlewareHandler = async (c, next) => {
  await next();
  for (const name of [...c.res.headers.keys()]) {
    if (name.toLowerCase().startsWith("access-control-")) c.res.headers.delete(name);
  }
  c.res.headers.set("X-Content-Type-Options", "nosniff");
  c.res.headers.set("Referrer-Policy", "no-referrer");
  c.res.headers.set("X-Frame-Options", "DENY");
};
