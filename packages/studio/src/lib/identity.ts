// The header's identity line: `<mode> · <org>[ / <project>][ · <baseUrl-host>]`.
export interface StudioIdentity {
  mode: "anonymous" | "oauth";
  orgSlug: string;
  projectSlug: string | null;
  /** The cloud API host, or null when the CLI points at the default (production) endpoint. */
  apiHost: string | null;
}

export function formatIdentity(id: StudioIdentity): string {
  let text = `${id.mode} · ${id.orgSlug}`;
  if (id.projectSlug) text += ` / ${id.projectSlug}`;
  if (id.apiHost) text += ` · ${id.apiHost}`;
  return text;
}
