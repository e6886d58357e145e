// /api/project-keys: the project's API keys for the cloud API's OpenAI routes
// (docs/openai-fine-tuning.md#project-api-keys), over the SDK. With no
// .svc/state.json there is no project, so no keys: an empty list, and issuing
// one makes the project, as a first deployment does.
import type { Answer, ProjectKey } from "@svc/wire";
import { Hono } from "hono";
import { ensuredProjectSession, existingProjectSession, projectSessionOr404 } from "../cloud-session.js";
import type { StudioEnv } from "../env.js";
import { StudioError } from "../errors.js";
import { jsonObjectBody } from "./deployments.js";

export function projectKeyRoutes(env: StudioEnv): Hono {
  const app = new Hono();

  app.get("/", async (c) => {
    const s = await existingProjectSession(env.projectDir);
    const keys: ProjectKey[] = s ? await s.client.listProjectKeys() : [];
    return c.json({ keys } satisfies Answer<"listProjectKeys">);
  });

  app.post("/", async (c) => {
    const body = await jsonObjectBody(c);
    if (typeof body.label !== "string")
      throw new StudioError(400, "invalid_request", "label: expected a string");
    const s = await ensuredProjectSession(env.projectDir);
    return c.json(
      { key: await s.client.issueProjectKey({ label: body.label }) } satisfies Answer<"issueProjectKey">,
      201,
    );
  });

  app.delete("/:keyId", async (c) => {
    const s = await projectSessionOr404(env.projectDir, "project key");
    return c.json({
      key: await s.client.revokeProjectKey(c.req.param("keyId")),
    } satisfies Answer<"revokeProjectKey">);
  });

  return app;
}
