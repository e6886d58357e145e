// A real OpenID provider (the `oidc-provider` library) on loopback for the login
// tests: one public native client, accounts accepted by any login/password (the
// library's development interactions), and a browser stand-in that walks its
// login and consent forms with fetch.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export const TEST_CLIENT_ID = "svc-cli";

export interface TestProvider {
  issuer: string;
  close(): Promise<void>;
}

export async function startTestProvider(): Promise<TestProvider> {
  let handler:
    | ((req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void)
    | null = null;
  const server: Server = createServer((req, res) => handler!(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: TEST_CLIENT_ID,
        application_type: "native",
        token_endpoint_auth_method: "none",
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      },
    ],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: `${id}@example.test`, email_verified: true, name: id };
        },
      };
    },
    // ID tokens carry the claims so the cloud API can read the email from them.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["svc-test-cookie-key"] },
  });
  handler = provider.callback();
  return {
    issuer,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Plays the browser: follows redirects from the authorize URL, fills the login
 * form (any login/password) and confirms consent, until the provider redirects
 * to the CLI's loopback callback. Resolves with the callback page's text.
 */
export async function signInWithBrowserStandIn(authorizeUrl: string, login = "alice"): Promise<string> {
  const cookies = new Map<string, string>();
  const remember = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  };
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  let url = authorizeUrl;
  let init: RequestInit = { method: "GET" };
  const callbackPrefix = new URL(authorizeUrl).searchParams.get("redirect_uri")!;
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...init.headers, cookie: cookieHeader() },
    });
    remember(res);
    if (url.startsWith(callbackPrefix)) return res.text();
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get("location")!, url).href;
      init = { method: "GET" };
      continue;
    }
    const html = await res.text();
    if (res.status !== 200)
      throw new Error(`provider answered ${res.status} at ${url}: ${html.slice(0, 300)}`);
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
    if (!form) throw new Error(`no form at ${url}: ${html.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const m of form[2].matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) {
      fields.set(m[1], m[2]);
    }
    if (/name="login"/.test(form[2])) {
      fields.set("login", login);
      fields.set("password", "any-password");
    }
    url = new URL(form[1].replace(/&amp;/g, "&"), url).href;
    init = {
      method: "POST",
      body: fields.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    };
  }
  throw new Error("the sign-in did not reach the callback within 20 hops");
}
