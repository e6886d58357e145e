// GET /api/connection: is the cloud API Studio talks to answering? The page's
// banner polls it (packages/studio ApiBanner). When the local server svc started
// is gone, asking also starts it again, as svc start does; a remote API is only
// probed, and the banner clears when it answers again.
import type { StudioConnectionBody } from "@svc/wire";
import { Hono } from "hono";
import { probe } from "../../sdk/api-recovery.js";
import { cloudApiUrl, usesRemoteCloudApi } from "../../sdk/config.js";
import { localServerPaths } from "../../sdk/local-server.js";
import { ensureCloudApi } from "../cloud-session.js";

export type { StudioConnectionBody } from "@svc/wire";

export function connectionRoutes(): Hono {
  const app = new Hono();
  app.get("/", async (c) => {
    const apiUrl = cloudApiUrl();
    const local = !usesRemoteCloudApi();
    const reason = await probe(apiUrl);
    // Not awaited: the banner shows while the server comes up; a failed start is in its log.
    if (reason !== null && local) ensureCloudApi().catch(() => {});
    const body: StudioConnectionBody = {
      apiUrl,
      reachable: reason === null,
      reason,
      local,
      log: local ? localServerPaths().log : null,
    };
    return c.json(body);
  });
  return app;
}
