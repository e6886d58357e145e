// GET /v1/upstreams: the external inference servers deployments may forward to.

import type { Answer, UpstreamInfo } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";

export function modelRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/upstreams", (c) => {
    const upstreams: UpstreamInfo[] = ctx.upstreams.names().map((name) => ({ name }));
    return c.json({ upstreams } satisfies Answer<"listUpstreams">);
  });
  return app;
}
