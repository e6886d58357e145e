// The header's identity line: `<mode> · <org>[ / <project>][ · <baseUrl-host>]`.
import type { StudioIdentityBody } from "@svc/wire";

/** The fields of GET /api/credentials the line shows. */
export type StudioIdentity = Pick<StudioIdentityBody, "mode" | "orgSlug" | "projectSlug" | "apiHost">;

export function formatIdentity(id: StudioIdentity): string {
  let text = `${id.mode} · ${id.orgSlug}`;
  if (id.projectSlug) text += ` / ${id.projectSlug}`;
  if (id.apiHost) text += ` · ${id.apiHost}`;
  return text;
}
