// The edge: serves deployments in the OpenAI chat-completions format and the
// Responses API (POST /v1/responses), with the same keys, limits and usage.
// A request names its deployment by Host (<slug>.<deployment domain>), by the
// X-Svc-Deployment header, or by the path prefix /d/<slug>/ (what the OpenAI
// clients use on machines where *.localhost does not resolve). Deployments and
// keys are read through a DeploymentDirectory that every change clears, so
// disabling, auth-mode changes and revocation apply to the next request.
import type { GenerationResult } from "@svc/engine";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ServerContext } from "../context.js";
import { ApiError, badRequest, escapeUnsafe, quoteInput } from "../http/api-error.js";
import { headerText, readJson } from "../http/body.js";
import { openAiErrorType } from "../http/openai-error.js";
import { clientAddress, enforceRateLimit } from "../http/rate-limit.js";
import { refuseNulInUrl } from "../http/validate.js";
import { respondWithChat } from "../inference/chat-completions.js";
import { chatParameterNames, parseChatRequest, refusedParam } from "../inference/chat-params.js";
import type { ResolvedTarget } from "../inference/inference-service.js";
import { respondWithResponse } from "../inference/responses.js";
import { parseResponsesRequest, RESPONSES_PARAMETERS } from "../inference/responses-request.js";
import { targetOf, upstreamOf } from "../store/deployment-store.js";
import { type DeploymentDirectory, deploymentSlugKey } from "./deployment-directory.js";
import type { KeyUsageRecorder, TokenMeter } from "./key-usage-recorder.js";
import { forwardToUpstream } from "./upstream-forwarding.js";

function openAiError(
  c: Context,
  status: ContentfulStatusCode,
  message: string,
  code: string,
  param: string | null = null,
) {
  return c.json(
    { error: { message: escapeUnsafe(message), type: openAiErrorType(status), param, code } },
    status,
  );
}

/** The request fields of both routes, for the `param` of an OpenAI error. */
const EDGE_PARAMETERS = [...chatParameterNames("openai"), ...RESPONSES_PARAMETERS];

export function slugFromHost(host: string | undefined, deploymentDomain: string): string | null {
  if (!host) return null;
  const hostname = host.toLowerCase().replace(/:\d+$/, "");
  const domain = deploymentDomain.toLowerCase().replace(/:\d+$/, "");
  if (!hostname.endsWith(`.${domain}`)) return null;
  const slug = hostname.slice(0, -domain.length - 1);
  return slug.includes(".") || slug === "" ? null : slug;
}

export function createEdgeApp(
  ctx: ServerContext,
  directory: DeploymentDirectory,
  usage: KeyUsageRecorder,
): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    if (error instanceof ApiError)
      return openAiError(c, error.status, error.message, error.code, refusedParam(error, EDGE_PARAMETERS));
    console.error("svc edge: request failed:", error);
    return openAiError(c, 500, "internal server error", "internal_error");
  });
  app.notFound((c) => openAiError(c, 404, `no route ${c.req.method} ${c.req.path}`, "not_found"));
  app.get("/healthz", (c) => c.json({ ok: true, service: "svc-edge" }));
  // Before any lookup (and any key check): a NUL in the slug would reach the database.
  app.use("*", async (c, next) => {
    refuseNulInUrl(c.req.url);
    await next();
  });

  /** The deployment's answer to one request: the chat completion, or the Responses API's response. */
  type Route = "chat" | "responses";

  const serve = async (c: Context, pathSlug: string | null, route: Route) => {
    const header = c.req.header("x-svc-deployment");
    const written =
      pathSlug ??
      (header === undefined ? null : headerText(header)) ??
      slugFromHost(c.req.header("host"), ctx.deploymentDomain);
    // In any case, as the Host's is read: /d/MY-BOT/ and X-Svc-Deployment: My-Bot are my-bot.
    const slug = written ? deploymentSlugKey(written) : null;
    if (!slug) {
      return openAiError(
        c,
        404,
        `no deployment addressed: use the host <slug>.${ctx.deploymentDomain}, the X-Svc-Deployment header or the path /d/<slug>/v1`,
        "deployment_not_found",
      );
    }
    const deployment = await directory.deployment(slug);
    if (deployment?.enabled !== 1)
      return openAiError(c, 404, `deployment ${quoteInput(slug)} not found`, "deployment_not_found");
    let meter: TokenMeter | undefined;
    if (deployment.auth_mode === "fixed_api_key") {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
      const keyId = match ? await directory.keyId(deployment.id, match[1]) : null;
      if (!keyId) {
        return openAiError(
          c,
          401,
          match ? "Incorrect API key provided." : "Missing API key: send Authorization: Bearer <key>.",
          "invalid_api_key",
        );
      }
      usage.touch(keyId);
      enforceRateLimit(c, ctx.rateLimiters.key, `key:${keyId}`, "for this API key");
      // Counted once past the limit: every later outcome, errors included, is a served request.
      meter = usage.request(keyId);
    } else {
      enforceRateLimit(
        c,
        ctx.rateLimiters.key,
        `open:${deployment.id}:${clientAddress(c)}`,
        "to this deployment from this address",
      );
    }
    const upstream = upstreamOf(deployment);
    if (upstream) {
      const raw = await readJson(c);
      if (typeof raw !== "object" || raw === null || Array.isArray(raw))
        throw badRequest("the request body must be a JSON object", "invalid_request");
      const declared = ctx.upstreams.get(upstream.name);
      if (!declared)
        return openAiError(
          c,
          503,
          `deployment ${slug} is served by upstream ${upstream.name}, which this server does not declare`,
          "upstream_unavailable",
        );
      const path = route === "chat" ? "chat/completions" : "responses";
      return forwardToUpstream(c, declared, path, upstream.model, raw as Record<string, unknown>, meter);
    }
    const body = await readJson(c);
    const request =
      route === "chat" ? await parseChatRequest(body, "openai") : await parseResponsesRequest(body);
    const target = targetOf(deployment);
    let resolved: ResolvedTarget;
    if (target.kind === "base_model") {
      resolved = ctx.inference.baseModel(target.baseModel, "target.baseModel", { pull: true });
    } else {
      const job = await ctx.store.jobs.get(target.adapter.jobId);
      if (!job)
        return openAiError(
          c,
          503,
          `the adapter of deployment ${slug} is no longer available`,
          "target_unavailable",
        );
      resolved = await ctx.inference.adapter(job, target.adapter, "target.adapter");
    }
    resolved = { ...resolved, label: slug, weightFormat: deployment.weight_format };
    const onResult = (result: GenerationResult) => meter?.(result.promptTokens, result.completionTokens);
    return "echo" in request
      ? respondWithResponse(c, ctx.inference, resolved, request, onResult)
      : respondWithChat(c, ctx.inference, resolved, request.params, onResult);
  };

  app.post("/v1/chat/completions", (c) => serve(c, null, "chat"));
  app.post("/d/:slug/v1/chat/completions", (c) => serve(c, c.req.param("slug"), "chat"));
  app.post("/v1/responses", (c) => serve(c, null, "responses"));
  app.post("/d/:slug/v1/responses", (c) => serve(c, c.req.param("slug"), "responses"));
  return app;
}
