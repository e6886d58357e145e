// Project API keys: POST /v1/project-keys?orgSlug=&projectSlug= { label }
// (201 { key }, its plaintext shown once), GET /v1/project-keys?… ({ keys }),
// DELETE /v1/project-keys/:keyId?… (revoke; { key }). A key works on the
// OpenAI API routes of its project only (auth/project-key.ts); these routes
// take an svc token.

import { type Answer, KEY_LABEL_MAX_LENGTH } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { notFound, quoteInput } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { object, parseBody, string } from "../http/validate.js";
import { ProjectKeyStore } from "../store/project-key-store.js";
import { projectFromQuery } from "./access.js";

const issueBody = object({ label: string({ min: 1, max: KEY_LABEL_MAX_LENGTH }) });

export function projectKeyRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  const keys = new ProjectKeyStore(ctx.store.db);
  app.post("/v1/project-keys", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const body = parseBody(issueBody, await readJson(c));
    return c.json(
      { key: await keys.issue(project.id, c.get("user").id, body.label) } satisfies Answer<"issueProjectKey">,
      201,
    );
  });
  app.get("/v1/project-keys", async (c) => {
    const project = await projectFromQuery(ctx, c);
    return c.json({ keys: await keys.list(project.id) } satisfies Answer<"listProjectKeys">);
  });
  app.delete("/v1/project-keys/:keyId", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const key = await keys.revoke(project.id, c.req.param("keyId"));
    if (!key) throw notFound(`key ${quoteInput(c.req.param("keyId"))}`);
    return c.json({ key } satisfies Answer<"revokeProjectKey">);
  });
  return app;
}
