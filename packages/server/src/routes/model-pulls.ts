// POST /v1/models/pull { model }: the server downloads a Hub model into its
// Hugging Face cache (or joins the download already running for it) and
// answers 202 { pull }; GET /v1/models/pull/:id says how far it is (bytes per
// file) and how it ended: the cached commit, or the Hub's error. The same
// --hub-models policy as jobs decides what may be pulled (docs/hub.md).
import type { Answer } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest, notFound } from "../http/api-error.js";
import { readJson } from "../http/body.js";
import { object, parseBody, string } from "../http/validate.js";

const pullBody = object({ model: string({ min: 1, max: 300 }) });

export function modelPullRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.post("/v1/models/pull", async (c) => {
    const body = parseBody(pullBody, await readJson(c));
    if (ctx.models.isRegistered(body.model))
      throw badRequest(
        `"model": ${body.model} is a ${ctx.models.get(body.model)!.info.source} model of this server, never fetched from the Hub`,
      );
    return c.json({ pull: ctx.models.pulls.start(body.model) } satisfies Answer<"pullModel">, 202);
  });
  app.get("/v1/models/pull/:id", (c) => {
    const pull = ctx.models.pulls.get(c.req.param("id"));
    if (!pull) throw notFound(`pull ${c.req.param("id")}`);
    return c.json({ pull } satisfies Answer<"getModelPull">);
  });
  return app;
}
