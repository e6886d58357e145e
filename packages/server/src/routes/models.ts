// GET /v1/models: the base models this server trains and serves.
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";

export function modelRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/models", (c) => c.json({ models: ctx.models.list() }));
  return app;
}
