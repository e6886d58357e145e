// Deployments: GET|POST /v1/endpoints, GET|PATCH|DELETE /v1/endpoints/:id.
import {
  type Answer,
  type Deployment,
  type DeploymentTarget,
  type DeploymentUpstream,
  type Project,
  RESERVED_SLUGS,
  type RunRetentionMode,
  SLUG_MAX_LENGTH,
  SLUG_MIN_LENGTH,
  SLUG_PATTERN,
  WEIGHT_FORMATS,
  type WeightFormat,
} from "@svc/wire";
import type { Context } from "hono";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import type { DeploymentsTable as DeploymentRow } from "../db/schema.js";
import { ApiError, badRequest, conflict, quoteInput } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import {
  boolean,
  byKind,
  type Check,
  literal,
  nullable,
  number,
  object,
  oneOf,
  optional,
  parseBody,
  string,
} from "../http/validate.js";
import { nowIso, uuidv7 } from "../ids.js";
import { targetOf, upstreamOf } from "../store/deployment-store.js";
import { deploymentOr404, projectFromQuery, visibleJob } from "./access.js";
import { adapterRefCheck } from "./inference.js";

export const DEFAULT_RETENTION_DAYS = 30;

const deploymentSlugCheck: Check<string> = (value, path) => {
  if (typeof value !== "string") throw badRequest(`"${path}" must be a string`, "invalid_slug");
  if (value.length < SLUG_MIN_LENGTH || value.length > SLUG_MAX_LENGTH || !SLUG_PATTERN.test(value)) {
    throw badRequest(
      `"${path}" must be ${SLUG_MIN_LENGTH}-${SLUG_MAX_LENGTH} characters of a-z, 0-9 and "-", starting and ending with a letter or digit (got ${quoteInput(value)})`,
      "invalid_slug",
    );
  }
  if (RESERVED_SLUGS.includes(value))
    throw badRequest(`"${path}": "${value}" is a reserved name; choose another slug`, "slug_reserved");
  return value;
};

const targetCheck: Check<DeploymentTarget> = byKind<DeploymentTarget>({
  adapter: object({ kind: literal("adapter"), adapter: adapterRefCheck }),
  base_model: object({ kind: literal("base_model"), baseModel: string({ min: 1, max: 300 }) }),
});

const upstreamField = optional(
  nullable(object({ name: string({ min: 1 }), model: string({ min: 1, max: 200 }) })),
);

const weightFormatField = optional(nullable(oneOf(WEIGHT_FORMATS)));

const retentionFields = {
  authMode: optional(oneOf(["fixed_api_key", "none"])),
  enabled: optional(boolean()),
  runRetentionMode: optional(oneOf(["days", "forever", "none"])),
  runRetentionDays: optional(nullable(number({ integer: true, min: 1, max: 3650 }))),
};

const createBody = object({
  slug: deploymentSlugCheck,
  target: targetCheck,
  upstream: upstreamField,
  weightFormat: weightFormatField,
  ...retentionFields,
});
const updateBody = object({
  target: optional(targetCheck),
  upstream: upstreamField,
  weightFormat: weightFormatField,
  ...retentionFields,
});

export function toDeployment(row: DeploymentRow, deploymentDomain: string): Deployment {
  return {
    id: row.id,
    projectId: row.project_id,
    slug: row.slug,
    target: targetOf(row),
    upstream: upstreamOf(row),
    weightFormat: row.weight_format,
    authMode: row.auth_mode,
    enabled: row.enabled === 1,
    customDomain: row.custom_domain,
    runRetentionMode: row.run_retention_mode,
    runRetentionDays: row.run_retention_days,
    url: `http://${row.slug}.${deploymentDomain}/v1/chat/completions`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Checks that a target names something that exists in the project and can be
 * served: by this server's engine, or, for a base model, by the upstream alone
 * (an external server may serve a model this one does not have).
 */
async function checkTarget(
  ctx: ServerContext,
  c: Context<ApiEnv>,
  project: Project,
  target: DeploymentTarget,
  upstream: DeploymentUpstream | null | undefined,
) {
  if (target.kind === "base_model") {
    if (!upstream) ctx.inference.baseModel(target.baseModel, "target.baseModel", { pull: true });
    return;
  }
  const job = await visibleJob(ctx, c, target.adapter.jobId);
  if (!job || job.project_id !== project.id)
    throw badRequest(
      `"target.adapter.jobId": no job ${target.adapter.jobId} in this project`,
      "job_not_found",
    );
  await ctx.inference.adapter(job, target.adapter, "target.adapter");
}

/** An upstream must be one the operator declared; the stored column is its JSON or null. */
function upstreamColumn(ctx: ServerContext, upstream: DeploymentUpstream | null | undefined): string | null {
  if (!upstream) return null;
  if (!ctx.upstreams.get(upstream.name)) {
    const known = ctx.upstreams.names();
    throw badRequest(
      `"upstream.name": ${quoteInput(upstream.name)} is not an upstream of this server (${known.length ? `declared: ${known.join(", ")}` : "none are declared; the operator adds them with svc server --upstream name=url"})`,
      "unknown_upstream",
    );
  }
  return JSON.stringify({ name: upstream.name, model: upstream.model });
}

/** A weight format is how this server's engine holds the model: an upstream deployment has none. */
function weightFormatColumn(
  format: WeightFormat | null | undefined,
  upstream: string | null,
): WeightFormat | null {
  if (format && upstream !== null)
    throw badRequest(
      `"weightFormat": an upstream deployment is served by its upstream, which picks its own weights; leave weightFormat unset or set upstream to null`,
      "weight_format_with_upstream",
    );
  return format ?? null;
}

/** The retention pair after applying a change: "days" always has a day count, other modes none. */
function retention(mode: RunRetentionMode, days: number | null | undefined, current: number | null) {
  if (mode !== "days") {
    if (days !== undefined && days !== null)
      throw badRequest(`"runRetentionDays" is only allowed when "runRetentionMode" is "days"`);
    return { mode, days: null };
  }
  if (days === null)
    throw badRequest(`"runRetentionDays" must be a positive integer when "runRetentionMode" is "days"`);
  return { mode, days: days ?? current ?? DEFAULT_RETENTION_DAYS };
}

export function endpointRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();

  app.post("/v1/endpoints", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const body = parseBody(createBody, await readJson(c));
    const upstream = upstreamColumn(ctx, body.upstream);
    const weightFormat = weightFormatColumn(body.weightFormat, upstream);
    await checkTarget(ctx, c, project, body.target, body.upstream);
    const kept = retention(body.runRetentionMode ?? "days", body.runRetentionDays, null);
    const now = nowIso();
    const row = await ctx.store.deployments.create({
      id: uuidv7(),
      project_id: project.id,
      slug: body.slug,
      target: JSON.stringify(body.target),
      upstream,
      weight_format: weightFormat,
      auth_mode: body.authMode ?? "fixed_api_key",
      enabled: body.enabled === false ? 0 : 1,
      custom_domain: null,
      run_retention_mode: kept.mode,
      run_retention_days: kept.days,
      created_at: now,
      updated_at: now,
    });
    if (!row) throw conflict(`The slug "${body.slug}" is already taken. Choose another one.`, "slug_taken");
    return c.json(
      { deployment: toDeployment(row, ctx.deploymentDomain) } satisfies Answer<"createDeployment">,
      201,
    );
  });

  app.get("/v1/endpoints", async (c) => {
    const project = await projectFromQuery(ctx, c);
    const rows = await ctx.store.deployments.list(project.id);
    return c.json({
      deployments: rows.map((r) => toDeployment(r, ctx.deploymentDomain)),
    } satisfies Answer<"listDeployments">);
  });

  app.get("/v1/endpoints/:id", async (c) => {
    const row = await deploymentOr404(ctx, c, c.req.param("id"));
    return c.json({ deployment: toDeployment(row, ctx.deploymentDomain) } satisfies Answer<"getDeployment">);
  });

  app.patch("/v1/endpoints/:id", async (c) => {
    const row = await deploymentOr404(ctx, c, c.req.param("id"));
    const body = parseBody(updateBody, await readJson(c));
    const patch: Partial<DeploymentRow> = {};
    if (body.target || body.upstream !== undefined) {
      // the pair is checked as it will stand: a new upstream may change what the target needs
      const target = body.target ?? targetOf(row);
      const upstream = body.upstream !== undefined ? body.upstream : upstreamOf(row);
      patch.upstream = upstreamColumn(ctx, upstream);
      await checkTarget(ctx, c, { id: row.project_id } as Project, target, upstream);
      patch.target = JSON.stringify(target);
    }
    if (body.weightFormat !== undefined || body.upstream !== undefined) {
      // as the pair will stand: a format and an upstream exclude each other
      const format = body.weightFormat !== undefined ? body.weightFormat : row.weight_format;
      patch.weight_format = weightFormatColumn(
        format,
        patch.upstream !== undefined ? patch.upstream : row.upstream,
      );
    }
    if (body.authMode) patch.auth_mode = body.authMode;
    if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
    if (body.runRetentionMode !== undefined || body.runRetentionDays !== undefined) {
      const kept = retention(
        body.runRetentionMode ?? row.run_retention_mode,
        body.runRetentionDays,
        row.run_retention_days,
      );
      patch.run_retention_mode = kept.mode;
      patch.run_retention_days = kept.days;
    }
    const updated = await ctx.store.deployments.update(row.id, patch);
    if (!updated) throw new ApiError(404, "not_found", `deployment ${row.id} not found`);
    return c.json({
      deployment: toDeployment(updated, ctx.deploymentDomain),
    } satisfies Answer<"updateDeployment">);
  });

  app.delete("/v1/endpoints/:id", async (c) => {
    const row = await deploymentOr404(ctx, c, c.req.param("id"));
    await ctx.store.deployments.delete(row.id);
    return c.body(null, 204);
  });
  return app;
}
