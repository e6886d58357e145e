// Bearer-token middleware: our own opaque tokens (looked up by hash), project
// API keys (project-key.ts) or, when an OIDC issuer is configured, JWTs
// verified against its JWKS.
import type { MiddlewareHandler } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { looksLikeJwt } from "./oidc.js";
import { authenticateProjectKey, isProjectKey } from "./project-key.js";

const unauthorized = (message: string) => new ApiError(401, "unauthorized", message);

export function requireBearer(ctx: ServerContext): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized("missing bearer token (Authorization: Bearer <token>)");
    const token = match[1];
    if (looksLikeJwt(token)) {
      if (!ctx.oidc)
        throw unauthorized("OpenID Connect tokens are not accepted: this server has no --oidc-issuer");
      const identity = await ctx.oidc.verify(token);
      if (!identity) throw unauthorized("the OpenID Connect token is invalid or expired");
      c.set("user", await ctx.store.identity.userForOidcSubject(identity.subject, identity.email));
    } else if (isProjectKey(token)) {
      c.set("user", await authenticateProjectKey(ctx, c, token));
    } else {
      const user = await ctx.store.identity.userForToken(token);
      if (!user) throw unauthorized("invalid bearer token");
      c.set("user", user);
    }
    await next();
  };
}
