// Project API keys (docs/openai-fine-tuning.md#project-api-keys): keys that
// belong to one project and work on the OpenAI API routes, issued and revoked
// with GET|POST /v1/project-keys and DELETE /v1/project-keys/:keyId.
import type { Iso8601 } from "./common.js";

/** The plaintext of a project key starts with this; the edge's deployment keys with svc_live_. */
export const PROJECT_KEY_PREFIX = "svc_proj_";

export interface ProjectKey {
  id: string;
  projectId: string;
  label: string;
  /** The key's first characters, for telling keys apart. */
  prefix: string;
  enabled: boolean;
  createdAt: Iso8601;
  lastUsedAt: Iso8601 | null;
}

/** The answer that issues a key: the only one that holds its plaintext. */
export interface IssuedProjectKey extends ProjectKey {
  plaintext: string;
}
