// Projects of an org: GET /v1/projects?orgSlug=, POST /v1/projects.

import { type Answer, SLUG_MAX_LENGTH, SLUG_MIN_LENGTH, SLUG_PATTERN } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { conflict, notFound, quoteInput } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { object, optional, parseBody, string } from "../http/validate.js";
import { orgFromQuery } from "./access.js";

export const slugCheck = () =>
  string({
    min: SLUG_MIN_LENGTH,
    max: SLUG_MAX_LENGTH,
    pattern: SLUG_PATTERN,
    patternText: "[a-z0-9][a-z0-9-]*[a-z0-9]",
  });

const createProjectBody = object({
  orgSlug: string({ min: 1 }),
  slug: slugCheck(),
  name: optional(string({ min: 1, max: 200 })),
});

export function projectRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/projects", async (c) => {
    const org = await orgFromQuery(ctx, c);
    return c.json({ projects: await ctx.store.projects.list(org) } satisfies Answer<"listProjects">);
  });
  app.post("/v1/projects", async (c) => {
    const body = parseBody(createProjectBody, await readJson(c));
    const org = await ctx.store.identity.memberOrgBySlug(c.get("user").id, body.orgSlug);
    if (!org) throw notFound(`org ${quoteInput(body.orgSlug)}`);
    const project = await ctx.store.projects.create(org, body.slug, body.name ?? body.slug);
    if (!project)
      throw conflict(`Project slug "${body.slug}" is already taken in org ${org.slug}.`, "slug_taken");
    return c.json({ project } satisfies Answer<"createProject">, 201);
  });
  return app;
}
