// Verifies OpenID Connect ID/access tokens (JWTs) against the issuer's JWKS,
// found through its discovery document. The login flow itself is the CLI's.
import { createRemoteJWKSet, jwtVerify } from "jose";

export interface OidcConfig {
  issuer: string;
  audience: string;
}

export interface OidcIdentity {
  subject: string;
  email: string | null;
}

export class OidcVerifier {
  private jwks: ReturnType<typeof createRemoteJWKSet> | null = null;

  constructor(readonly config: OidcConfig) {}

  private async keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.jwks) return this.jwks;
    const discovery = `${this.config.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    const response = await fetch(discovery);
    if (!response.ok) throw new Error(`OIDC discovery ${discovery} answered ${response.status}`);
    const document = (await response.json()) as { jwks_uri?: unknown };
    if (typeof document.jwks_uri !== "string") throw new Error(`OIDC discovery ${discovery} has no jwks_uri`);
    this.jwks = createRemoteJWKSet(new URL(document.jwks_uri));
    return this.jwks;
  }

  /** The verified identity, or null when the token is not valid for this issuer and audience. */
  async verify(token: string): Promise<OidcIdentity | null> {
    const jwks = await this.keySet();
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: this.config.issuer,
        audience: this.config.audience,
      });
      if (typeof payload.sub !== "string" || payload.sub === "") return null;
      const email = typeof payload.email === "string" ? payload.email : null;
      return { subject: `${this.config.issuer}#${payload.sub}`, email };
    } catch {
      return null;
    }
  }
}

/** A JWT is three base64url segments; our own tokens never contain dots. */
export const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);
