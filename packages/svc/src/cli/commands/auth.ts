// svc login | logout | whoami: OpenID Connect sign-in (authorization code + PKCE
// on a loopback redirect) against the issuer the cloud API names, and the
// identity line `<mode> · <org>[ / <project>]`.
import { spawn } from "node:child_process";
import { CloudApiClient } from "../../sdk/client.js";
import { cloudApiUrl } from "../../sdk/config.js";
import {
  bearerToken,
  credentialsPath,
  deleteCredentials,
  readCredentials,
  writeCredentials,
} from "../../sdk/credentials.js";
import { ensureLocalServer } from "../../sdk/local-server.js";
import { runLoginFlow } from "../../sdk/oidc.js";
import { readProjectState } from "../../sdk/project-state.js";
import { defaultProjectDir } from "../../sdk/session.js";
import { type Command, parse } from "../args.js";

/** Opens a browser only where one can show up: a terminal session with a display (or macOS). */
function openBrowser(url: string): boolean {
  const hasDisplay =
    Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY) || process.platform === "darwin";
  if (!process.stdout.isTTY || !hasDisplay) return false;
  const opener = process.platform === "darwin" ? "open" : "xdg-open";
  try {
    spawn(opener, [url], { detached: true, stdio: "ignore" })
      .on("error", () => {})
      .unref();
    return true;
  } catch {
    return false;
  }
}

export const loginCommand: Command = {
  name: "login",
  summary: "sign in with the identity provider the cloud API trusts (OpenID Connect)",
  usage: [
    "Usage: svc login [--no-browser]",
    "",
    "Signs in with OpenID Connect (authorization code + PKCE, redirect to",
    "http://127.0.0.1:<random port>/callback) against the issuer named by the cloud",
    "API's GET /v1/auth/config, and stores the tokens in ~/.svc/credentials.json.",
    "Prints the sign-in URL; opens a browser only on a terminal with a display.",
  ].join("\n"),
  async run(argv) {
    const { values } = parse(argv, { "no-browser": { type: "boolean" } }, 0);
    const apiUrl = cloudApiUrl();
    await ensureLocalServer();
    const anonymous = new CloudApiClient({ baseUrl: apiUrl });
    const { oidc } = await anonymous.authConfig();
    if (!oidc) {
      throw new Error(
        `the cloud API at ${apiUrl} has no identity provider (start svc server with --oidc-issuer)`,
      );
    }
    const tokens = await runLoginFlow(oidc, {
      onAuthorizeUrl: (url) => {
        process.stdout.write(`Open this URL to sign in:\n\n  ${url}\n\n`);
        if (!values["no-browser"] && openBrowser(url)) process.stdout.write("(opened in your browser)\n");
        process.stdout.write("Waiting for the sign-in to finish…\n");
      },
    });
    const me = await anonymous.with({ token: tokens.bearer }).me();
    const org = me.orgs[0];
    if (!org) throw new Error("signed in, but the cloud API lists no org for this identity");
    await writeCredentials({
      mode: "oauth",
      accessToken: tokens.bearer,
      refreshToken: tokens.refreshToken,
      expiresAt: tokens.expiresAt,
      issuer: oidc.issuer,
      clientId: oidc.clientId,
      orgSlug: org.slug,
      apiUrl,
    });
    process.stdout.write(`signed in: oauth · ${org.slug}${me.email ? ` (${me.email})` : ""}\n`);
    return 0;
  },
};

export const logoutCommand: Command = {
  name: "logout",
  summary: "forget the stored credentials (~/.svc/credentials.json)",
  usage:
    "Usage: svc logout\n\nDeletes ~/.svc/credentials.json. The next command that needs the cloud API mints a new anonymous identity.",
  async run(argv) {
    parse(argv, {}, 0);
    const existed = await deleteCredentials();
    process.stdout.write(existed ? "signed out\n" : "not signed in\n");
    return 0;
  },
};

export const whoamiCommand: Command = {
  name: "whoami",
  summary: "print the identity: <mode> · <org>[ / <project>]",
  usage: [
    "Usage: svc whoami",
    "",
    "Prints `<mode> · <org>[ / <project>]` (the project from ./.svc/state.json).",
    "Exits 1 when signed out or when the cloud API cannot be reached.",
  ].join("\n"),
  async run(argv) {
    parse(argv, {}, 0);
    const credentials = await readCredentials();
    if (!credentials) {
      process.stderr.write(
        `svc whoami: not signed in (no ${credentialsPath()}); svc login, or any svc start, signs in\n`,
      );
      return 1;
    }
    const client = new CloudApiClient({ baseUrl: cloudApiUrl(), token: bearerToken(credentials) });
    const me = await client.me();
    const state = await readProjectState(defaultProjectDir()).catch(() => null);
    const org = state?.orgSlug ?? credentials.orgSlug ?? me.orgs[0]?.slug;
    process.stdout.write(`${me.mode} · ${org}${state ? ` / ${state.projectSlug}` : ""}\n`);
    return 0;
  },
};
