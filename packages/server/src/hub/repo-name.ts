// `<org>/<name>[@<revision>]`: how a Hub model is named everywhere in svc.

import { HUB_REPO_ID_PATTERN, HUB_REVISION_PATTERN } from "../wire.js";

export const COMMIT_SHA = /^[0-9a-f]{40}$/;

export interface HubRepoRef {
  repo: string;
  /** As written after "@", or "main". */
  revision: string;
}

/** Splits `org/name@revision`; null when it is not a valid Hub id. */
export function parseHubName(name: string): HubRepoRef | null {
  const at = name.indexOf("@");
  const repo = at < 0 ? name : name.slice(0, at);
  const revision = at < 0 ? "main" : name.slice(at + 1);
  if (!HUB_REPO_ID_PATTERN.test(repo) || !HUB_REVISION_PATTERN.test(revision) || repo.includes(".."))
    return null;
  return { repo, revision };
}

export function hubName(ref: HubRepoRef): string {
  return ref.revision === "main" ? ref.repo : `${ref.repo}@${ref.revision}`;
}
