// OpenID Connect sign-in for `svc login`: authorization code flow with PKCE (S256)
// and a loopback redirect on 127.0.0.1 with a random port (RFC 8252 §7.3), and the
// refresh-token grant. The provider is whatever issuer the cloud API names in
// GET /v1/auth/config; endpoints come from its discovery document.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { OAuthCredentials } from "./credentials.js";

export interface OidcClientConfig {
  issuer: string;
  clientId: string;
  /** The audience the cloud API checks; when it differs from clientId it is requested as a resource indicator. */
  audience?: string;
  scopes?: string[];
}

export interface OidcDiscovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
}

export interface OidcTokens {
  /** The token the cloud API accepts as bearer (see bearerFromTokens). */
  bearer: string;
  refreshToken?: string;
  expiresAt?: string;
}

export class OidcError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OidcError";
  }
}

export async function discover(issuer: string): Promise<OidcDiscovery> {
  const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new OidcError(`cannot reach the identity provider at ${url}: ${(err as Error).message}`);
  }
  if (!res.ok) throw new OidcError(`${url} answered HTTP ${res.status}`);
  const doc = (await res.json()) as Partial<OidcDiscovery>;
  if (!doc.authorization_endpoint || !doc.token_endpoint) {
    throw new OidcError(`${url} has no authorization_endpoint or token_endpoint`);
  }
  return doc as OidcDiscovery;
}

function base64url(bytes: Buffer): string {
  return bytes.toString("base64url");
}

function wantsResource(config: OidcClientConfig): boolean {
  return Boolean(config.audience && config.audience !== config.clientId);
}

function isJwt(token: unknown): token is string {
  return typeof token === "string" && token.split(".").length === 3;
}

/**
 * Which token the cloud API gets: the ID token (audience = client id, as kubectl's
 * OIDC plugin does) unless the server asks for another audience, in which case
 * the JWT access token issued for that resource.
 */
export function bearerFromTokens(body: Record<string, unknown>, config: OidcClientConfig): string {
  if (wantsResource(config) && isJwt(body.access_token)) return body.access_token;
  if (isJwt(body.id_token)) return body.id_token;
  if (typeof body.access_token === "string") return body.access_token;
  throw new OidcError("the token endpoint returned neither an ID token nor an access token");
}

export interface LoginFlowOptions {
  /** Told the authorize URL once the loopback listener is ready (print it, open it). */
  onAuthorizeUrl: (url: string) => void | Promise<void>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function runLoginFlow(config: OidcClientConfig, options: LoginFlowOptions): Promise<OidcTokens> {
  const endpoints = await discover(config.issuer);
  const verifier = base64url(randomBytes(32));
  const challenge = base64url(createHash("sha256").update(verifier).digest());
  const state = base64url(randomBytes(16));
  const nonce = base64url(randomBytes(16));

  const callback = await listenForCallback(state, options);
  try {
    const redirectUri = `http://127.0.0.1:${callback.port}/callback`;
    const authorize = new URL(endpoints.authorization_endpoint);
    const scopes = config.scopes ?? ["openid", "profile", "email", "offline_access"];
    authorize.search = new URLSearchParams({
      response_type: "code",
      client_id: config.clientId,
      redirect_uri: redirectUri,
      scope: scopes.join(" "),
      state,
      nonce,
      code_challenge: challenge,
      code_challenge_method: "S256",
      // Refresh tokens for offline_access need an explicit consent prompt.
      ...(scopes.includes("offline_access") ? { prompt: "consent" } : {}),
      ...(wantsResource(config) ? { resource: config.audience! } : {}),
    }).toString();
    await options.onAuthorizeUrl(authorize.toString());
    const code = await callback.code;
    const body = await tokenRequest(endpoints.token_endpoint, {
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      client_id: config.clientId,
      code_verifier: verifier,
      ...(wantsResource(config) ? { resource: config.audience! } : {}),
    });
    return tokensFrom(body, config);
  } finally {
    callback.close();
  }
}

export async function refreshOAuthCredentials(credentials: OAuthCredentials): Promise<OAuthCredentials> {
  if (!credentials.refreshToken) throw new OidcError("the sign-in has expired; run svc login again");
  const config: OidcClientConfig = { issuer: credentials.issuer, clientId: credentials.clientId };
  const endpoints = await discover(credentials.issuer);
  const body = await tokenRequest(endpoints.token_endpoint, {
    grant_type: "refresh_token",
    refresh_token: credentials.refreshToken,
    client_id: credentials.clientId,
  }).catch((err: Error) => {
    throw new OidcError(`refreshing the sign-in failed (${err.message}); run svc login again`);
  });
  // Keep the kind of token we had: an access-token bearer stays one.
  const hadAccessToken =
    isJwt(credentials.accessToken) && !isIdTokenFor(credentials.accessToken, credentials.clientId);
  const bearer =
    hadAccessToken && isJwt(body.access_token) ? body.access_token : bearerFromTokens(body, config);
  const tokens = tokensFrom(body, config);
  return {
    ...credentials,
    accessToken: bearer,
    refreshToken: tokens.refreshToken ?? credentials.refreshToken,
    expiresAt: tokens.expiresAt,
  };
}

function isIdTokenFor(jwt: string, clientId: string): boolean {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString("utf8")) as {
      aud?: unknown;
    };
    return payload.aud === clientId || (Array.isArray(payload.aud) && payload.aud.includes(clientId));
  } catch {
    return false;
  }
}

function tokensFrom(body: Record<string, unknown>, config: OidcClientConfig): OidcTokens {
  const bearer = bearerFromTokens(body, config);
  let expiresAt: string | undefined;
  const exp = jwtExpiry(bearer);
  if (exp !== null) expiresAt = new Date(exp * 1000).toISOString();
  else if (typeof body.expires_in === "number")
    expiresAt = new Date(Date.now() + body.expires_in * 1000).toISOString();
  return {
    bearer,
    refreshToken: typeof body.refresh_token === "string" ? body.refresh_token : undefined,
    expiresAt,
  };
}

function jwtExpiry(token: string): number | null {
  if (!isJwt(token)) return null;
  try {
    const payload = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString("utf8")) as {
      exp?: unknown;
    };
    return typeof payload.exp === "number" ? payload.exp : null;
  } catch {
    return null;
  }
}

async function tokenRequest(
  endpoint: string,
  form: Record<string, string>,
): Promise<Record<string, unknown>> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const why = [body.error, body.error_description].filter(Boolean).join(": ") || `HTTP ${res.status}`;
    throw new OidcError(`token endpoint refused the request: ${why}`);
  }
  return body;
}

interface CallbackListener {
  port: number;
  code: Promise<string>;
  close(): void;
}

/** A one-shot HTTP listener on 127.0.0.1 that waits for /callback?code=&state=. */
async function listenForCallback(state: string, options: LoginFlowOptions): Promise<CallbackListener> {
  let resolve!: (code: string) => void;
  let reject!: (err: Error) => void;
  const code = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  code.catch(() => {});
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    const page = (status: number, text: string) => {
      res.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><title>svc login</title><p>${text}</p>`);
    };
    const error = url.searchParams.get("error");
    if (url.searchParams.get("state") !== state) {
      page(400, "Sign-in failed: state mismatch. Run svc login again.");
      reject(new OidcError("the sign-in callback carried the wrong state; run svc login again"));
    } else if (error) {
      const description = url.searchParams.get("error_description");
      page(400, "Sign-in failed. You can close this tab.");
      reject(
        new OidcError(
          `the identity provider refused the sign-in: ${error}${description ? `: ${description}` : ""}`,
        ),
      );
    } else if (!url.searchParams.get("code")) {
      page(400, "Sign-in failed: no code. Run svc login again.");
      reject(new OidcError("the sign-in callback carried no code"));
    } else {
      page(200, "Signed in to svc. You can close this tab.");
      resolve(url.searchParams.get("code")!);
    }
  });
  await new Promise<void>((res, rej) => {
    server.once("error", rej);
    server.listen(0, "127.0.0.1", () => res());
  });
  const timeoutMs = options.timeoutMs ?? 5 * 60_000;
  const timer = setTimeout(
    () => reject(new OidcError(`no sign-in within ${Math.round(timeoutMs / 1000)}s; run svc login again`)),
    timeoutMs,
  );
  const onAbort = () => reject(new OidcError("sign-in aborted"));
  options.signal?.addEventListener("abort", onAbort, { once: true });
  return {
    port: (server.address() as AddressInfo).port,
    code,
    close() {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      server.closeAllConnections();
      server.close();
    },
  };
}
