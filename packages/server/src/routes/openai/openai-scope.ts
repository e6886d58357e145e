// The project an OpenAI API request works in. The official clients send their
// `organization` and `project` options as the OpenAI-Organization and
// OpenAI-Project headers: here they carry svc's org and project slugs
// (?orgSlug=&projectSlug= works too). A project API key is its project's
// scope: headers naming another project are refused. Objects reached by id
// need no scope (the token must belong to their org); when a scope is sent or
// the key has one, an object of another project is not found, as if it did not exist.

import type { Project } from "@svc/wire";
import type { Context } from "hono";
import { keyProjectOf } from "../../auth/project-key.js";
import type { ApiEnv, ServerContext } from "../../context.js";
import { OpenAiError } from "../../http/openai-error.js";

interface ScopeSlugs {
  orgSlug?: string;
  projectSlug?: string;
}

function scopeSlugs(c: Context<ApiEnv>): ScopeSlugs {
  return {
    orgSlug: c.req.header("openai-organization") ?? c.req.query("orgSlug"),
    projectSlug: c.req.header("openai-project") ?? c.req.query("projectSlug"),
  };
}

const missing = (what: string) =>
  new OpenAiError(
    400,
    "missing_scope",
    `the ${what} is required: send the OpenAI-Organization and OpenAI-Project headers (the client's organization and project options) with svc's org and project slugs`,
    null,
  );

async function resolve(ctx: ServerContext, c: Context<ApiEnv>, slugs: ScopeSlugs): Promise<Project> {
  if (!slugs.orgSlug) throw missing("organization (OpenAI-Organization)");
  if (!slugs.projectSlug) throw missing("project (OpenAI-Project)");
  const org = await ctx.store.identity.memberOrgBySlug(c.get("user").id, slugs.orgSlug);
  if (!org)
    throw new OpenAiError(
      401,
      "no_such_organization",
      `No such organization: ${slugs.orgSlug} (this token belongs to no org with that slug)`,
      null,
    );
  const project = await ctx.store.projects.bySlug(org, slugs.projectSlug);
  if (!project)
    throw new OpenAiError(
      401,
      "no_such_project",
      `No such project: ${slugs.projectSlug} in organization ${org.slug}`,
      null,
    );
  return project;
}

/** The project of the request's project key, checked against the scope the request names, if any. */
async function keyProject(ctx: ServerContext, c: Context<ApiEnv>, projectId: string): Promise<Project> {
  const row = await ctx.store.db
    .selectFrom("projects")
    .innerJoin("orgs", "orgs.id", "projects.org_id")
    .select([
      "projects.id",
      "projects.org_id",
      "projects.slug",
      "projects.name",
      "projects.created_at",
      "orgs.slug as org_slug",
    ])
    .where("projects.id", "=", projectId)
    .executeTakeFirstOrThrow();
  const project: Project = {
    id: row.id,
    orgId: row.org_id,
    orgSlug: row.org_slug,
    slug: row.slug,
    name: row.name,
    createdAt: row.created_at,
  };
  const slugs = scopeSlugs(c);
  if (
    (slugs.orgSlug && slugs.orgSlug !== project.orgSlug) ||
    (slugs.projectSlug && slugs.projectSlug !== project.slug)
  )
    throw new OpenAiError(
      401,
      "mismatched_project",
      `this API key belongs to project ${project.orgSlug}/${project.slug}: the OpenAI-Organization and OpenAI-Project headers must name it or be left out`,
      null,
    );
  return project;
}

/** The request's project; a request without one is refused. */
export function scopedProject(ctx: ServerContext, c: Context<ApiEnv>): Promise<Project> {
  const bound = keyProjectOf(c);
  return bound ? keyProject(ctx, c, bound) : resolve(ctx, c, scopeSlugs(c));
}

/** The request's project when it has one: its key's, or the one it names (else null). */
export async function optionalProject(ctx: ServerContext, c: Context<ApiEnv>): Promise<Project | null> {
  const bound = keyProjectOf(c);
  if (bound) return keyProject(ctx, c, bound);
  const slugs = scopeSlugs(c);
  return slugs.orgSlug || slugs.projectSlug ? resolve(ctx, c, slugs) : null;
}

/** Whether the caller may see an object of `projectId`: a member of its org, and in the request's project when it names one. */
export async function canSee(ctx: ServerContext, c: Context<ApiEnv>, projectId: string): Promise<boolean> {
  const scope = await optionalProject(ctx, c);
  if (scope) return scope.id === projectId;
  const orgId = await ctx.store.projects.orgIdOf(projectId);
  return orgId !== undefined && (await ctx.store.identity.isMember(c.get("user").id, orgId));
}
