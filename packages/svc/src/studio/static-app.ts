// Serves the built web app (packages/studio/dist/app): index.html with the
// per-launch token in <meta name="svc-studio-token">, and the hashed assets.
import { readFile, stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { Hono } from "hono";
import { svcPackageDir } from "../sdk/config.js";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".map": "application/json",
  ".woff2": "font/woff2",
};

/** The web app build: SVC_STUDIO_APP_DIR, else the @svc/studio workspace next to this package. */
export function studioAppDir(): string {
  return process.env.SVC_STUDIO_APP_DIR || join(svcPackageDir(), "..", "studio", "dist", "app");
}

export function injectToken(html: string, token: string): string {
  const meta = `<meta name="svc-studio-token" content="${token}" />`;
  return html.includes("</head>") ? html.replace("</head>", `    ${meta}\n  </head>`) : `${meta}\n${html}`;
}

// React sets style attributes, so inline styles are allowed; scripts come only from this origin.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function staticRoutes(token: string, appDir = studioAppDir()): Hono {
  const app = new Hono();

  // Read per request (it is small): a rebuilt web app is served without restarting svc dev.
  app.get("/", async (c) => {
    let html: string;
    try {
      html = await readFile(join(appDir, "index.html"), "utf8");
    } catch {
      return c.text(
        `Studio's web app is not built (${join(appDir, "index.html")} is missing): run npm run build`,
        503,
      );
    }
    return c.html(injectToken(html, token), 200, {
      "Cache-Control": "no-store",
      "Content-Security-Policy": CSP,
    });
  });

  app.get("/assets/*", async (c) => {
    const root = resolve(appDir);
    let file: string;
    try {
      file = resolve(root, `.${decodeURIComponent(c.req.path)}`);
    } catch {
      return c.notFound(); // malformed percent-encoding
    }
    if (!file.startsWith(root + sep)) return c.notFound();
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return c.notFound();
    return c.body(await readFile(file), 200, {
      "Content-Type": CONTENT_TYPES[extname(file)] ?? "application/octet-stream",
      // Vite puts a content hash in every asset name.
      "Cache-Control": "public, max-age=31536000, immutable",
    });
  });

  return app;
}
