// The cloud API (/v1) as one Hono app: public auth routes, then the bearer
// middleware, then the route modules; one error shape for all of them.
import { Hono } from "hono";
import { requireBearer } from "./auth/bearer.js";
import type { ApiEnv, ServerContext } from "./context.js";
import { ExportRunner } from "./exports/export-runner.js";
import { ApiError, errorBody, handleApiError } from "./http/api-error.js";
import { isOpenAiPath, openAiErrorResponse } from "./http/openai-error.js";
import { enforceRateLimit } from "./http/rate-limit.js";
import { refuseNulInUrl } from "./http/validate.js";
import { artifactRoutes } from "./routes/artifacts.js";
import { meRoutes, publicAuthRoutes } from "./routes/auth.js";
import { datasetProfileRoutes } from "./routes/dataset-profiles.js";
import { datasetRoutes } from "./routes/datasets.js";
import { endpointRoutes } from "./routes/endpoints.js";
import { eventRoutes } from "./routes/events.js";
import { exportRoutes } from "./routes/exports.js";
import { inferenceRoutes } from "./routes/inference.js";
import { jobPauseRoutes } from "./routes/job-pause.js";
import { jobScoringRoutes } from "./routes/job-scoring.js";
import { jobRoutes } from "./routes/jobs.js";
import { keyRoutes } from "./routes/keys.js";
import { modelPullRoutes } from "./routes/model-pulls.js";
import { modelRoutes } from "./routes/models.js";
import { openAiChatRoutes } from "./routes/openai/chat-completions.js";
import { fileRoutes } from "./routes/openai/files.js";
import { fineTuningEventRoutes } from "./routes/openai/fine-tuning-job-events.js";
import { fineTuningJobRoutes } from "./routes/openai/fine-tuning-jobs.js";
import { graderRoutes } from "./routes/openai/graders.js";
import { openAiModelRoutes } from "./routes/openai/models.js";
import { projectKeyRoutes } from "./routes/project-keys.js";
import { projectRoutes } from "./routes/projects.js";

export function createApiApp(ctx: ServerContext): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  // OpenAI's routes answer in OpenAI's error shape, their bearer and rate-limit refusals included.
  app.onError((error, c) =>
    isOpenAiPath(c.req.path) ? openAiErrorResponse(c, error) : handleApiError(error, c),
  );
  app.notFound((c) => {
    const message = `no route ${c.req.method} ${c.req.path}`;
    if (isOpenAiPath(c.req.path)) return openAiErrorResponse(c, new ApiError(404, "not_found", message));
    return c.json(errorBody(message, "not_found"), 404);
  });
  // One rule for every route: no NUL in a query parameter or path segment (they reach the database).
  app.use("*", async (c, next) => {
    refuseNulInUrl(c.req.url);
    await next();
  });
  app.get("/healthz", (c) => c.json({ ok: true, service: "svc-api", database: ctx.store.kind }));
  app.route("/", publicAuthRoutes(ctx));
  app.use("/v1/*", requireBearer(ctx));
  app.use("/v1/*", async (c, next) => {
    enforceRateLimit(c, ctx.rateLimiters.identity, `identity:${c.get("user").id}`, "for this identity");
    await next();
  });
  for (const routes of [
    meRoutes,
    projectRoutes,
    modelRoutes,
    modelPullRoutes,
    datasetRoutes,
    datasetProfileRoutes,
    jobRoutes,
    jobPauseRoutes,
    jobScoringRoutes,
    eventRoutes,
    artifactRoutes,
    inferenceRoutes,
    endpointRoutes,
    keyRoutes,
    projectKeyRoutes,
    // OpenAI's API (docs/openai-fine-tuning.md); its /v1/models/{id} after svc's /v1/models/pull.
    openAiModelRoutes,
    fileRoutes,
    fineTuningJobRoutes,
    fineTuningEventRoutes,
    graderRoutes,
    openAiChatRoutes,
  ]) {
    app.route("/", routes(ctx));
  }
  app.route("/", exportRoutes(ctx, new ExportRunner(ctx.dataDir)));
  return app;
}
