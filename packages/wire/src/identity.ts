// Wire types of orgs, projects and who is asking (/v1/me, /v1/auth, /v1/projects),
// and the slug rules the server validates with and the UIs hint with.

import type { Iso8601 } from "./common.js";

export interface Org {
  id: string;
  slug: string;
  name: string;
}

export interface Project {
  id: string;
  orgId: string;
  orgSlug: string;
  slug: string;
  name: string;
  createdAt: Iso8601;
}

export type IdentityMode = "anonymous" | "oauth";

export interface Me {
  mode: IdentityMode;
  subject: string;
  email: string | null;
  orgs: Org[];
}

/** POST /v1/auth/anonymous → 201 */
export interface AnonymousAuthResponse {
  token: string;
  org: Org;
}

/** Project scope sent as query ?orgSlug=&projectSlug= on scoped routes. */
export interface ProjectScope {
  orgSlug: string;
  projectSlug: string;
}

export interface CreateProjectRequest {
  orgSlug: string;
  slug: string;
  name?: string;
}

// ---------------------------------------------------------------- slug rules (shared by server validation and UI hints)

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]*[a-z0-9]$/;
export const SLUG_MIN_LENGTH = 2;
export const SLUG_MAX_LENGTH = 50;
export const KEY_LABEL_MAX_LENGTH = 80;

export const RESERVED_SLUGS: readonly string[] = [
  "www",
  "api",
  "admin",
  "app",
  "auth",
  "login",
  "dashboard",
  "console",
  "studio",
  "docs",
  "status",
  "mail",
  "static",
  "cdn",
  "edge",
  "internal",
  "root",
  "svc",
];
