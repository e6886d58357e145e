// OpenID Connect bearer tokens: the server finds the issuer's JWKS through its
// discovery document and verifies signature, issuer, audience and expiry. The
// issuer here serves a real discovery document and JWKS over HTTP and signs
// real RS256 JWTs (the full login flow against oidc-provider is tested with
// the CLI in packages/svc).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, it } from "node:test";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { call, type ServerProcess, serverFor } from "./harness.js";

const AUDIENCE = "svc-cli";

async function startIssuer(): Promise<{
  issuer: string;
  sign(
    claims: Record<string, unknown>,
    options?: { audience?: string; expiresIn?: string; issuer?: string },
  ): Promise<string>;
  server: Server;
}> {
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  let issuer = "";
  const server = createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    if (req.url === "/.well-known/openid-configuration")
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    else if (req.url === "/jwks") res.end(JSON.stringify({ keys: [jwk] }));
    else res.writeHead(404).end("{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    server,
    sign: (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(options.issuer ?? issuer)
        .setAudience(options.audience ?? AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? "5m")
        .sign(privateKey),
  };
}

let issuer: Awaited<ReturnType<typeof startIssuer>>;
let server: ServerProcess & { cleanup(): Promise<void> };
before(async () => {
  issuer = await startIssuer();
  server = await serverFor("sqlite", ["--oidc-issuer", issuer.issuer, "--oidc-audience", AUDIENCE]);
});
after(async () => {
  await server?.cleanup();
  issuer?.server.close();
});

it("publishes the issuer and client id for `svc login`", async () => {
  const reply = await call(server.apiUrl, "GET", "/v1/auth/config");
  assert.deepEqual(reply.body, { oidc: { issuer: issuer.issuer, clientId: AUDIENCE } });
});

it("maps a verified token's subject to a user with a personal org, the same one on every request", async () => {
  const token = await issuer.sign({ sub: "alice", email: "alice@example.test" });
  const me = await call(server.apiUrl, "GET", "/v1/me", { token });
  assert.equal(me.status, 200, JSON.stringify(me.body));
  assert.equal(me.body.mode, "oauth");
  assert.equal(me.body.subject, "alice");
  assert.equal(me.body.email, "alice@example.test");
  assert.equal(me.body.orgs.length, 1);
  assert.match(me.body.orgs[0].slug, /^alice-[a-z0-9]{8}$/);
  const again = await call(server.apiUrl, "GET", "/v1/me", { token: await issuer.sign({ sub: "alice" }) });
  assert.deepEqual(again.body.orgs, me.body.orgs);
  const project = await call(server.apiUrl, "POST", "/v1/projects", {
    token,
    json: { orgSlug: me.body.orgs[0].slug, slug: "p1" },
  });
  assert.equal(project.status, 201);
  const bob = await call(server.apiUrl, "GET", `/v1/projects?orgSlug=${me.body.orgs[0].slug}`, {
    token: await issuer.sign({ sub: "bob" }),
  });
  assert.equal(bob.status, 404);
});

it("refuses tokens for another audience or issuer, expired ones and ones signed with another key", async () => {
  const other = await startIssuer();
  try {
    const bad = [
      await issuer.sign({ sub: "carol" }, { audience: "someone-else" }),
      await issuer.sign({ sub: "carol" }, { issuer: "http://evil.example" }),
      await issuer.sign({ sub: "carol" }, { expiresIn: "-1m" }),
      await other.sign({ sub: "carol" }, { issuer: issuer.issuer }),
    ];
    for (const token of bad) {
      const reply = await call(server.apiUrl, "GET", "/v1/me", { token });
      assert.equal(reply.status, 401);
      assert.equal(reply.body.error.code, "unauthorized");
    }
  } finally {
    other.server.close();
  }
});
