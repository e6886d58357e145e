// The banner shown while the cloud API Studio talks to is gone (issue 17): it
// polls /api/connection and clears as soon as the API answers again. Separate
// from the job page's "Event stream interrupted." banner, which stays as the
// spec has it.
import type { StudioConnectionBody } from "@svc/wire";
import { useEffect, useState } from "react";
import { getJson } from "../api.js";

/** How often the page asks whether the cloud API answers. */
export const CONNECTION_POLL_MS = 3000;

export function apiBannerText(c: StudioConnectionBody): string {
  const host = new URL(c.apiUrl).host;
  return c.local
    ? `The local server at ${host} is not answering (${c.reason}). svc dev is restarting it; its log: ${c.log}`
    : `The cloud API at ${host} is not answering (${c.reason}). Retrying every ${CONNECTION_POLL_MS / 1000} s; the page recovers when it is back.`;
}

export function ApiBanner() {
  const [down, setDown] = useState<StudioConnectionBody | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const poll = async () => {
      try {
        const c = await getJson<StudioConnectionBody>("/api/connection");
        if (!stopped) setDown(c.reachable ? null : c);
      } catch {
        // svc dev itself is gone or restarted: the stale-token banner covers that.
      }
      if (!stopped) timer = window.setTimeout(poll, CONNECTION_POLL_MS);
    };
    poll();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, []);
  if (!down) return null;
  return (
    <div className="stale-banner api-banner" role="alert" data-testid="api-banner">
      {apiBannerText(down)}
    </div>
  );
}
