// Deployment API keys: GET|POST /v1/endpoints/:id/keys,
// DELETE /v1/endpoints/:id/keys/:keyId (revoke: enabled = false) and
// GET /v1/endpoints/:id/keys/:keyId/usage?days=N (per UTC day, oldest first).

import { type Answer, KEY_LABEL_MAX_LENGTH, KEY_USAGE_DAYS_RANGE, KEY_USAGE_SUMMARY_DAYS } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { notFound, quoteInput } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { integerQuery, object, parseBody, string } from "../http/validate.js";
import { deploymentOr404 } from "./access.js";

const issueBody = object({ label: string({ min: 1, max: KEY_LABEL_MAX_LENGTH }) });

export function keyRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/endpoints/:id/keys", async (c) => {
    const deployment = await deploymentOr404(ctx, c, c.req.param("id"));
    const body = parseBody(issueBody, await readJson(c));
    return c.json(
      {
        key: await ctx.store.deployments.issueKey(deployment.id, body.label),
      } satisfies Answer<"issueDeploymentKey">,
      201,
    );
  });
  app.get("/v1/endpoints/:id/keys", async (c) => {
    const deployment = await deploymentOr404(ctx, c, c.req.param("id"));
    return c.json({
      keys: await ctx.store.deployments.listKeys(deployment.id),
    } satisfies Answer<"listDeploymentKeys">);
  });
  app.get("/v1/endpoints/:id/keys/:keyId/usage", async (c) => {
    const deployment = await deploymentOr404(ctx, c, c.req.param("id"));
    const days = integerQuery(c.req.query("days"), "days", KEY_USAGE_DAYS_RANGE, KEY_USAGE_SUMMARY_DAYS);
    const keyId = c.req.param("keyId");
    if (!(await ctx.store.deployments.hasKey(deployment.id, keyId)))
      throw notFound(`key ${quoteInput(keyId)}`);
    return c.json({
      usage: await ctx.store.keyUsage.daily(keyId, days),
    } satisfies Answer<"getDeploymentKeyUsage">);
  });
  app.delete("/v1/endpoints/:id/keys/:keyId", async (c) => {
    const deployment = await deploymentOr404(ctx, c, c.req.param("id"));
    const key = await ctx.store.deployments.revokeKey(deployment.id, c.req.param("keyId"));
    if (!key) throw notFound(`key ${quoteInput(c.req.param("keyId"))}`);
    return c.json({ key } satisfies Answer<"revokeDeploymentKey">);
  });
  return app;
}
