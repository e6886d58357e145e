// Per-request access to the cloud API: credentials and project state are re-read
// from disk on every call and a fresh CloudApiClient is built, so `svc login`,
// `svc logout` or a hand-written .svc/state.json take effect without a restart.
import { CloudApiClient } from "../sdk/client.js";
import { cloudApiUrl } from "../sdk/config.js";
import { bearerToken, type Credentials, ensureCredentials } from "../sdk/credentials.js";
import { ensureLocalServer } from "../sdk/local-server.js";
import { ensureProjectState, type ProjectState, readProjectState } from "../sdk/project-state.js";
import { StudioError } from "./errors.js";

export interface CloudSession {
  client: CloudApiClient;
  credentials: Credentials;
  apiUrl: string;
}

export interface ScopedCloudSession extends CloudSession {
  state: ProjectState;
}

let serverStarting: Promise<void> | null = null;

/** Starts the local server once when it is the target and nothing answers (shared by concurrent requests). */
export function ensureCloudApi(): Promise<void> {
  if (!serverStarting) {
    serverStarting = ensureLocalServer()
      .then(() => undefined)
      .finally(() => {
        serverStarting = null;
      });
  }
  return serverStarting;
}

/** Credentials (minted when the file is missing) and an unscoped client. */
export async function openCloudSession(): Promise<CloudSession> {
  const apiUrl = cloudApiUrl();
  await ensureCloudApi();
  const credentials = await ensureCredentials(apiUrl);
  return {
    client: new CloudApiClient({ baseUrl: apiUrl, token: bearerToken(credentials) }),
    credentials,
    apiUrl,
  };
}

function scoped(session: CloudSession, state: ProjectState): ScopedCloudSession {
  return {
    ...session,
    state,
    client: session.client.with({ scope: { orgSlug: state.orgSlug, projectSlug: state.projectSlug } }),
  };
}

/** A client scoped to the project's existing state, or null when .svc/state.json is absent (no upstream call then). */
export async function existingProjectSession(projectDir: string): Promise<ScopedCloudSession | null> {
  const state = await readProjectState(projectDir);
  if (!state) return null;
  return scoped(await openCloudSession(), state);
}

/** existingProjectSession for a route about one thing (`what`): with no .svc/state.json, that thing is a 404. */
export async function projectSessionOr404(projectDir: string, what: string): Promise<ScopedCloudSession> {
  const s = await existingProjectSession(projectDir);
  if (!s)
    throw new StudioError(404, "not_found", `${what} not found: this project has no .svc/state.json yet`);
  return s;
}

/** A scoped client, creating .svc/state.json lazily for anonymous credentials (OAuth: MissingProjectStateError). */
export async function ensuredProjectSession(projectDir: string): Promise<ScopedCloudSession> {
  const session = await openCloudSession();
  return scoped(session, await ensureProjectState(projectDir, session.client, session.credentials));
}
