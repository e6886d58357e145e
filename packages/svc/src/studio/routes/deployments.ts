// /api/deployments: a thin layer over the SDK's deployment methods. Every call
// re-reads credentials and state; CloudApiError keeps its upstream status.
// Each answer is the cloud route's (`satisfies Answer<...>`), which the page reads.
import type { Answer, CreateDeploymentRequest, Deployment, UpdateDeploymentRequest } from "@svc/wire";
import { type Context, Hono } from "hono";
import { ensuredProjectSession, existingProjectSession, projectSessionOr404 } from "../cloud-session.js";
import type { StudioEnv } from "../env.js";
import { StudioError } from "../errors.js";

/** The JSON object body of a request, or a 400 naming what is wrong. */
export async function jsonObjectBody(c: Context): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new StudioError(400, "invalid_json", "request body must be JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new StudioError(400, "invalid_request", "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

export function deploymentRoutes(env: StudioEnv): Hono {
  const app = new Hono();

  const session = () => projectSessionOr404(env.projectDir, "deployment");

  // With no .svc/state.json there can be no deployments: empty list, no upstream call.
  app.get("/", async (c) => {
    const s = await existingProjectSession(env.projectDir);
    const deployments: Deployment[] = s ? await s.client.listDeployments() : [];
    return c.json({ deployments } satisfies Answer<"listDeployments">);
  });

  // The first create of an anonymous project writes .svc/state.json.
  app.post("/", async (c) => {
    const body = (await jsonObjectBody(c)) as unknown as CreateDeploymentRequest;
    const s = await ensuredProjectSession(env.projectDir);
    return c.json(
      { deployment: await s.client.createDeployment(body) } satisfies Answer<"createDeployment">,
      201,
    );
  });

  app.get("/:id", async (c) => {
    return c.json({
      deployment: await (await session()).client.getDeployment(c.req.param("id")),
    } satisfies Answer<"getDeployment">);
  });

  app.patch("/:id", async (c) => {
    const body = (await jsonObjectBody(c)) as UpdateDeploymentRequest;
    return c.json({
      deployment: await (await session()).client.updateDeployment(c.req.param("id"), body),
    } satisfies Answer<"updateDeployment">);
  });

  app.delete("/:id", async (c) => {
    await (await session()).client.deleteDeployment(c.req.param("id"));
    return c.body(null, 204);
  });

  app.get("/:id/keys", async (c) => {
    return c.json({
      keys: await (await session()).client.listDeploymentKeys(c.req.param("id")),
    } satisfies Answer<"listDeploymentKeys">);
  });

  app.post("/:id/keys", async (c) => {
    const body = await jsonObjectBody(c);
    if (typeof body.label !== "string")
      throw new StudioError(400, "invalid_request", "label: expected a string");
    const key = await (await session()).client.issueDeploymentKey(c.req.param("id"), { label: body.label });
    return c.json({ key } satisfies Answer<"issueDeploymentKey">, 201);
  });

  app.delete("/:id/keys/:keyId", async (c) => {
    const key = await (await session()).client.revokeDeploymentKey(c.req.param("id"), c.req.param("keyId"));
    return c.json({ key } satisfies Answer<"revokeDeploymentKey">);
  });

  return app;
}
