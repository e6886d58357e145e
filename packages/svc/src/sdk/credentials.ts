// ~/.svc/credentials.json: the anonymous token minted on first need, or the OAuth
// tokens `svc login` obtained. Written with mode 0600 through a temporary file and
// a rename, so a crash never leaves half a file.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { CloudApiClient } from "./client.js";
import { svcHomeDir } from "./config.js";
import { readTextIfExists, writeJsonFileAtomically } from "./json-file.js";
import { refreshOAuthCredentials } from "./oidc.js";

export interface AnonymousCredentials {
  mode: "anonymous";
  token: string;
  orgSlug: string;
  apiUrl: string;
}

export interface OAuthCredentials {
  mode: "oauth";
  /** The bearer token the cloud API verifies with the issuer's JWKS. */
  accessToken: string;
  refreshToken?: string;
  /** ISO 8601; absent when the provider did not say. */
  expiresAt?: string;
  issuer: string;
  clientId: string;
  orgSlug: string;
  apiUrl: string;
}

export type Credentials = AnonymousCredentials | OAuthCredentials;

export class CredentialsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CredentialsFileError";
  }
}

export function credentialsPath(): string {
  return join(svcHomeDir(), "credentials.json");
}

export async function readCredentials(): Promise<Credentials | null> {
  const path = credentialsPath();
  const text = await readTextIfExists(path);
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(`${path} is not valid JSON; delete it (svc logout) and try again`);
  }
  const problem = credentialsProblem(value);
  if (problem) throw new CredentialsFileError(`${path}: ${problem}; delete it (svc logout) and try again`);
  return value as Credentials;
}

function credentialsProblem(v: unknown): string | null {
  if (typeof v !== "object" || v === null) return "expected an object";
  const c = v as Record<string, unknown>;
  const str = (k: string) => typeof c[k] === "string" && (c[k] as string).length > 0;
  if (c.mode === "anonymous") {
    for (const k of ["token", "orgSlug", "apiUrl"]) if (!str(k)) return `field "${k}" is missing`;
    return null;
  }
  if (c.mode === "oauth") {
    for (const k of ["accessToken", "issuer", "clientId", "orgSlug", "apiUrl"])
      if (!str(k)) return `field "${k}" is missing`;
    return null;
  }
  return `field "mode" must be "anonymous" or "oauth"`;
}

export async function writeCredentials(credentials: Credentials): Promise<void> {
  await writeJsonFileAtomically(credentialsPath(), credentials, { dir: 0o700, file: 0o600 });
}

export async function deleteCredentials(): Promise<boolean> {
  const existed = (await readCredentials().catch(() => true)) !== null;
  await rm(credentialsPath(), { force: true });
  return existed;
}

export function bearerToken(credentials: Credentials): string {
  return credentials.mode === "anonymous" ? credentials.token : credentials.accessToken;
}

/**
 * Credentials for apiUrl: the stored ones, refreshed when an OAuth token has
 * expired, or a freshly minted anonymous identity when there are none (or the
 * stored anonymous token belongs to another server).
 */
export async function ensureCredentials(apiUrl: string): Promise<Credentials> {
  const stored = await readCredentials();
  if (stored?.mode === "oauth") {
    if (stored.expiresAt && Date.parse(stored.expiresAt) - 30_000 < Date.now() && stored.refreshToken) {
      const refreshed = await refreshOAuthCredentials(stored);
      await writeCredentials(refreshed);
      return refreshed;
    }
    return stored;
  }
  if (stored && sameUrl(stored.apiUrl, apiUrl)) return stored;
  const minted = await new CloudApiClient({ baseUrl: apiUrl }).createAnonymousIdentity();
  const credentials: AnonymousCredentials = {
    mode: "anonymous",
    token: minted.token,
    orgSlug: minted.org.slug,
    apiUrl: apiUrl.replace(/\/+$/, ""),
  };
  await writeCredentials(credentials);
  return credentials;
}

function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}
