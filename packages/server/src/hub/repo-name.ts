// `<org>/<name>[@<revision>]`: how a Hub model is named everywhere in svc.

import { isHubModelName } from "@svc/wire";

export const COMMIT_SHA = /^[0-9a-f]{40}$/;

export interface HubRepoRef {
  repo: string;
  /** As written after "@", or "main". */
  revision: string;
}

/** Splits `org/name@revision`; null when it is not a Hub id (@svc/wire's isHubModelName: `svc/…` names are bundled models). */
export function parseHubName(name: string): HubRepoRef | null {
  if (!isHubModelName(name)) return null;
  const at = name.indexOf("@");
  return at < 0
    ? { repo: name, revision: "main" }
    : { repo: name.slice(0, at), revision: name.slice(at + 1) };
}

export function hubName(ref: HubRepoRef): string {
  return ref.revision === "main" ? ref.repo : `${ref.repo}@${ref.revision}`;
}
