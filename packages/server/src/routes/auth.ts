// Identity: anonymous tokens, the OIDC settings the CLI logs in with, and /me.

import type { AnonymousAuthResponse, Answer, Me } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { clientAddress, enforceRateLimit } from "../http/rate-limit.js";

/** Routes that need no token. */
export function publicAuthRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/auth/anonymous", async (c) => {
    // Anyone may sign up, so sign-ups are what bounds the identities one client can mint.
    enforceRateLimit(c, ctx.rateLimiters.signup, clientAddress(c), "to sign up from this address");
    const { token, org } = await ctx.store.identity.createAnonymous();
    const body: AnonymousAuthResponse = { token, org };
    return c.json(body satisfies Answer<"createAnonymousIdentity">, 201);
  });
  app.get("/v1/auth/config", (c) =>
    c.json({
      oidc: ctx.oidc ? { issuer: ctx.oidc.config.issuer, clientId: ctx.oidc.config.audience } : null,
    }),
  );
  return app;
}

export function meRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/me", async (c) => {
    const user = c.get("user");
    const me: Me = {
      mode: user.mode,
      subject: user.mode === "oauth" ? user.subject.slice(user.subject.lastIndexOf("#") + 1) : user.subject,
      email: user.email,
      orgs: await ctx.store.identity.orgsOf(user.id),
    };
    return c.json(me satisfies Answer<"me">);
  });
  return app;
}
