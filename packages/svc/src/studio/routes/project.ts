// /api/manifest, /api/credentials and /api/models: the project's trainer, the
// identity shown in the header, and the base models for the pickers;
// /api/models/pull: the server downloading a Hub model (the picker's Download).
import type { Answer, StudioIdentityBody, StudioManifestBody } from "@svc/wire";
import { Hono } from "hono";
import { cloudApiUrl, isDefaultCloudApi } from "../../sdk/config.js";
import { ensureCredentials, readCredentials } from "../../sdk/credentials.js";
import { loadManifest } from "../../sdk/manifest.js";
import { readProjectState } from "../../sdk/project-state.js";
import { ensureCloudApi, openCloudSession } from "../cloud-session.js";
import type { StudioEnv } from "../env.js";
import { StudioError } from "../errors.js";
import { jsonObjectBody } from "./deployments.js";

export type { StudioIdentityBody } from "@svc/wire";

export function projectRoutes(env: StudioEnv): Hono {
  const app = new Hono();

  // Rebuilt on every call, so reloading the page picks up edits to src/svc/index.ts.
  app.get("/manifest", async (c) => {
    const manifest = await loadManifest(env.projectDir, { rebuild: true });
    return c.json({
      trainer: manifest.trainer ? { name: manifest.trainer.name } : null,
    } satisfies StudioManifestBody);
  });

  app.get("/credentials", async (c) => {
    const apiUrl = cloudApiUrl();
    let credentials = await readCredentials();
    let minted = false;
    if (!credentials) {
      await ensureCloudApi();
      credentials = await ensureCredentials(apiUrl);
      minted = true;
    }
    const state = await readProjectState(env.projectDir);
    const body: StudioIdentityBody = {
      mode: credentials.mode,
      orgSlug: state?.orgSlug ?? credentials.orgSlug,
      projectSlug: state?.projectSlug ?? null,
      apiHost: isDefaultCloudApi(apiUrl) ? null : new URL(apiUrl).host,
      minted,
    };
    return c.json(body);
  });

  app.get("/models", async (c) => {
    const { client } = await openCloudSession();
    return c.json({ models: await client.listModels() } satisfies Answer<"listModels">);
  });

  app.post("/models/pull", async (c) => {
    const body = await jsonObjectBody(c);
    if (typeof body.model !== "string")
      throw new StudioError(400, "invalid_request", "model: expected a string");
    const { client } = await openCloudSession();
    return c.json({ pull: await client.pullModel(body.model) } satisfies Answer<"pullModel">, 202);
  });

  app.get("/models/pull/:id", async (c) => {
    const { client } = await openCloudSession();
    return c.json({ pull: await client.getModelPull(c.req.param("id")) } satisfies Answer<"getModelPull">);
  });

  return app;
}
