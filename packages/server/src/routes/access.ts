// Org scoping: a token reaches only objects of orgs its user belongs to; any
// other object answers 404, exactly like one that does not exist.

import type { Org, Project } from "@svc/wire";
import type { Context } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import type { DatasetsTable } from "../db/schema.js";
import { badRequest, notFound } from "../http/api-error.js";
import { UUID_PATTERN } from "../ids.js";
import type { DeploymentRow } from "../store/deployment-store.js";
import type { JobRow } from "../store/job-store.js";

export async function orgFromQuery(ctx: ServerContext, c: Context<ApiEnv>): Promise<Org> {
  const orgSlug = c.req.query("orgSlug");
  if (!orgSlug) throw badRequest(`"orgSlug" is required (query parameter)`);
  const org = await ctx.store.identity.memberOrgBySlug(c.get("user").id, orgSlug);
  if (!org) throw notFound(`org ${orgSlug}`);
  return org;
}

/** The project named by ?orgSlug=&projectSlug=. */
export async function projectFromQuery(ctx: ServerContext, c: Context<ApiEnv>): Promise<Project> {
  const org = await orgFromQuery(ctx, c);
  const projectSlug = c.req.query("projectSlug");
  if (!projectSlug) throw badRequest(`"projectSlug" is required (query parameter)`);
  const project = await ctx.store.projects.bySlug(org, projectSlug);
  if (!project) throw notFound(`project ${org.slug}/${projectSlug}`);
  return project;
}

async function canSeeProject(ctx: ServerContext, c: Context<ApiEnv>, projectId: string): Promise<boolean> {
  const orgId = await ctx.store.projects.orgIdOf(projectId);
  return orgId !== undefined && (await ctx.store.identity.isMember(c.get("user").id, orgId));
}

export async function visibleJob(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  jobId: string,
): Promise<JobRow | undefined> {
  if (!UUID_PATTERN.test(jobId)) return undefined;
  const job = await ctx.store.jobs.get(jobId);
  return job && (await canSeeProject(ctx, c, job.project_id)) ? job : undefined;
}

export async function jobOr404(ctx: ServerContext, c: Context<ApiEnv>, jobId: string): Promise<JobRow> {
  const job = await visibleJob(ctx, c, jobId);
  if (!job) throw notFound(`job ${jobId}`);
  return job;
}

export async function datasetOr404(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  id: string,
): Promise<DatasetsTable> {
  const row = UUID_PATTERN.test(id) ? await ctx.store.datasets.get(id) : undefined;
  if (!row || !(await canSeeProject(ctx, c, row.project_id))) throw notFound(`dataset ${id}`);
  return row;
}

export async function deploymentOr404(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  id: string,
): Promise<DeploymentRow> {
  const row = UUID_PATTERN.test(id) ? await ctx.store.deployments.get(id) : undefined;
  if (!row || !(await canSeeProject(ctx, c, row.project_id))) throw notFound(`deployment ${id}`);
  return row;
}
