// The Studio loopback server: the Hono app `svc dev` serves. Order matters:
// the Host guard runs before anything (including the HTML), the token guard
// before every /api route, and no response ever carries a CORS header.
import { Hono } from "hono";
import type { StudioEnv } from "./env.js";
import { errorBody, errorResponse } from "./errors.js";
import { connectionRoutes } from "./routes/connection.js";
import { deploymentRoutes } from "./routes/deployments.js";
import { inferenceRoutes } from "./routes/inference.js";
import { jobRoutes } from "./routes/jobs.js";
import { projectRoutes } from "./routes/project.js";
import { projectKeyRoutes } from "./routes/project-keys.js";
import { trainRoutes } from "./routes/train.js";
import { hostGuard, noCrossOrigin, sameOriginMutations, studioTokenGuard } from "./security.js";
import { staticRoutes } from "./static-app.js";

export interface StudioAppOptions extends StudioEnv {
  token: string;
  /** Folder of the built web app; defaults to packages/studio/dist/app. */
  appDir?: string;
}

export function createStudioApp(options: StudioAppOptions): Hono {
  const env: StudioEnv = { projectDir: options.projectDir };
  const app = new Hono();
  app.use("*", noCrossOrigin);
  app.use("*", hostGuard);
  app.use("/api/*", studioTokenGuard(options.token));
  app.use("/api/*", sameOriginMutations);

  app.route("/api", projectRoutes(env));
  app.route("/api/connection", connectionRoutes());
  app.route("/api/train", trainRoutes(env));
  app.route("/api/jobs", jobRoutes(env));
  app.route("/api/deployments", deploymentRoutes(env));
  app.route("/api/project-keys", projectKeyRoutes(env));
  app.route("/api/inference", inferenceRoutes(env));
  app.all("/api/*", (c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));
  app.route("/", staticRoutes(options.token, options.appDir));

  app.notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}
