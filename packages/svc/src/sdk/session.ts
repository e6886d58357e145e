// What an SDK call needs before it talks to the cloud API: a running backend,
// credentials, and (for scoped routes) the project state, resolved in that order.
import { resolve } from "node:path";
import { CloudApiClient } from "./client.js";
import { cloudApiUrl } from "./config.js";
import { bearerToken, type Credentials, ensureCredentials } from "./credentials.js";
import { ensureLocalServer } from "./local-server.js";
import { ensureProjectState, type ProjectState, readProjectState } from "./project-state.js";

export interface SvcSession {
  apiUrl: string;
  credentials: Credentials;
  /** Unscoped client (identity, models, projects). */
  client: CloudApiClient;
}

export interface ScopedSvcSession extends SvcSession {
  state: ProjectState;
  /** Client bound to the project scope (jobs, datasets, inference, deployments). */
  scoped: CloudApiClient;
}

/** The project directory: SVC_PROJECT_DIR when set, otherwise the working directory. */
export function defaultProjectDir(): string {
  return resolve(process.env.SVC_PROJECT_DIR || process.cwd());
}

export async function openSession(): Promise<SvcSession> {
  const apiUrl = cloudApiUrl();
  await ensureLocalServer();
  const credentials = await ensureCredentials(apiUrl);
  return {
    apiUrl,
    credentials,
    client: new CloudApiClient({ baseUrl: apiUrl, token: bearerToken(credentials) }),
  };
}

/** A session with a project scope; creates .svc/state.json lazily for anonymous credentials. */
export async function openScopedSession(projectDir = defaultProjectDir()): Promise<ScopedSvcSession> {
  const session = await openSession();
  const state = await ensureProjectState(projectDir, session.client, session.credentials);
  return { ...session, state, scoped: session.client.with({ scope: state }) };
}

/** A scoped session only when .svc/state.json already exists (listing never creates a project). */
export async function openExistingScopedSession(
  projectDir = defaultProjectDir(),
): Promise<ScopedSvcSession | null> {
  const state = await readProjectState(projectDir);
  if (!state) return null;
  const session = await openSession();
  return { ...session, state, scoped: session.client.with({ scope: state }) };
}
