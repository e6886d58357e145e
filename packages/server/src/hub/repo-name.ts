// `<org>/<name>[@<revision>]`: how a Hub model is named everywhere in svc.

/** The Hub's repo id rules: org and name of letters, digits, "_", "-", "." (not leading), at most 96 characters each. */
const REPO_ID = /^[A-Za-z0-9][\w.-]{0,95}\/[A-Za-z0-9][\w.-]{0,95}$/;
/** A branch, tag or commit sha; "refs/pr/1" style names included, no ".." or leading "/". */
const REVISION = /^(?!.*\.\.)(?!\/)[\w.\-/]{1,200}$/;
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
  if (!REPO_ID.test(repo) || !REVISION.test(revision) || repo.includes("..")) return null;
  return { repo, revision };
}

export function hubName(ref: HubRepoRef): string {
  return ref.revision === "main" ? ref.repo : `${ref.repo}@${ref.revision}`;
}
