// A project API key as a bearer token (svc_proj_…): the request acts for the
// member who issued the key, bound to the key's project, on the OpenAI API
// routes only (files, fine-tuning jobs, models, chat completions); every other
// route takes an svc token. The key is looked up on every request, so
// revoking it, or its issuer leaving the org, takes effect on the next one.

import { PROJECT_KEY_PREFIX } from "@svc/wire";
import type { Context } from "hono";
import type { ServerContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { isOpenAiPath } from "../http/openai-error.js";
import type { UserRow } from "../store/identity-store.js";
import { ProjectKeyStore } from "../store/project-key-store.js";

/** The project each request authenticated by a project key is bound to. */
const boundProject = new WeakMap<Request, string>();

export const isProjectKey = (token: string): boolean => token.startsWith(PROJECT_KEY_PREFIX);

/** The project id the request's key is bound to; undefined for an svc token. */
export const keyProjectOf = (c: Context): string | undefined => boundProject.get(c.req.raw);

/** The issuer of the enabled key `token`, with the request bound to its project; else a 401 (403 off the OpenAI routes). */
export async function authenticateProjectKey(
  ctx: ServerContext,
  c: Context,
  token: string,
): Promise<UserRow> {
  const invalid = new ApiError(
    401,
    "invalid_api_key",
    "Incorrect API key provided: the project API key is unknown or revoked.",
  );
  const key = await new ProjectKeyStore(ctx.store.db).enabledKey(token);
  if (!key) throw invalid;
  const user = await ctx.store.db
    .selectFrom("users")
    .selectAll()
    .where("id", "=", key.userId)
    .executeTakeFirst();
  const orgId = await ctx.store.projects.orgIdOf(key.projectId);
  if (!user || orgId === undefined || !(await ctx.store.identity.isMember(user.id, orgId))) throw invalid;
  if (!isOpenAiPath(c.req.path))
    throw new ApiError(
      403,
      "project_key_not_allowed",
      `project API keys work on the OpenAI API routes (/v1/files, /v1/fine_tuning, /v1/models, /v1/chat/completions, /v1/responses) only, not ${c.req.method} ${c.req.path}: use an svc token`,
    );
  boundProject.set(c.req.raw, key.projectId);
  return user;
}
