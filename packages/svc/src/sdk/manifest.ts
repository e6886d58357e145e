// The project's trainer manifest: src/svc/index.ts bundled by esbuild into
// .svc/build/index.mjs, then imported to read the createSvc({ trainer }) export.
// `import … from "svc"` in user code is resolved to this very SDK (an absolute
// file URL, kept external), so a project never needs the registry's `svc` and
// the bundle shares one SDK instance with the CLI that loads it.
import { stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { svcPackageDir } from "./config.js";
import type { SvcManifest } from "./svc.js";

export const ENTRY_PATH = join("src", "svc", "index.ts");
export const BUNDLE_PATH = join(".svc", "build", "index.mjs");

export type BuildResult = { ok: true; outfile: string } | { ok: false; errors: string[] };

export interface ManifestSummary {
  trainer: { name: string; model?: string } | null;
}

/** The SDK entry that `import … from "svc"` means inside a bundle. */
export function sdkEntryUrl(): string {
  return pathToFileURL(join(svcPackageDir(), "dist", "src", "index.js")).href;
}

export async function buildBundle(projectDir: string): Promise<BuildResult> {
  const root = resolve(projectDir);
  const entry = join(root, ENTRY_PATH);
  const outfile = join(root, BUNDLE_PATH);
  try {
    await stat(entry);
  } catch {
    return {
      ok: false,
      errors: [`${ENTRY_PATH}:1:1 not found (run svc init, or create it with createTrainer and createSvc)`],
    };
  }
  const esbuild = await import("esbuild");
  const sdk = sdkEntryUrl();
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [entry],
      outfile,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      sourcemap: "inline",
      logLevel: "silent",
      // Packages of the user's own node_modules stay external like Node would load them;
      // "svc" is rewritten to this SDK.
      packages: "external",
      plugins: [
        {
          name: "svc-sdk",
          setup(build) {
            build.onResolve({ filter: /^svc$/ }, () => ({ path: sdk, external: true }));
          },
        },
      ],
    });
    if (result.errors.length > 0)
      return { ok: false, errors: result.errors.map((m) => formatMessage(root, m)) };
    return { ok: true, outfile };
  } catch (err) {
    const failure = err as { errors?: import("esbuild").Message[] };
    if (Array.isArray(failure.errors) && failure.errors.length > 0) {
      return { ok: false, errors: failure.errors.map((m) => formatMessage(root, m)) };
    }
    return { ok: false, errors: [`${ENTRY_PATH}:1:1 ${(err as Error).message}`] };
  }
}

/** `file:line:col message`, with a 1-based column like editors and tsc print. */
export function formatMessage(root: string, m: import("esbuild").Message): string {
  if (!m.location) return m.text;
  const file = relative(root, resolve(root, m.location.file)) || m.location.file;
  return `${file}:${m.location.line}:${m.location.column + 1} ${m.text}`;
}

export class ManifestBuildError extends Error {
  readonly errors: string[];
  constructor(errors: string[]) {
    super(errors.join("\n"));
    this.name = "ManifestBuildError";
    this.errors = errors;
  }
}

/**
 * Imports the bundle (building it first when missing or when rebuild is set) and
 * returns the project's manifest, or null when the bundle exports none.
 * Throws ManifestBuildError with the build's messages when the build fails.
 */
export async function loadProject(
  projectDir: string,
  options: { rebuild?: boolean } = {},
): Promise<SvcManifest | null> {
  const outfile = join(resolve(projectDir), BUNDLE_PATH);
  let info = await stat(outfile).catch(() => null);
  if (options.rebuild || !info) {
    const built = await buildBundle(projectDir);
    if (!built.ok) throw new ManifestBuildError(built.errors);
    info = await stat(outfile);
  }
  // The query makes a rebuilt bundle a new module instead of Node's cached one.
  const url = `${pathToFileURL(outfile).href}?v=${info.mtimeMs}-${info.size}`;
  const mod = (await import(url)) as Record<string, unknown>;
  const manifest = (mod.default ?? mod.svc) as SvcManifest | undefined;
  if (!manifest || typeof manifest !== "object" || !manifest.trainer) return null;
  const trainer = manifest.trainer as { name?: unknown };
  if (typeof trainer.name !== "string") return null;
  return manifest;
}

export async function loadManifest(
  projectDir: string,
  options: { rebuild?: boolean } = {},
): Promise<ManifestSummary> {
  const manifest = await loadProject(projectDir, options);
  if (!manifest) return { trainer: null };
  return { trainer: { name: manifest.trainer.name, model: manifest.trainer.model } };
}
