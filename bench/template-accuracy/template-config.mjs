// A template's training settings exactly as `svc start` would send them to the
// engine: src/svc/index.ts is bundled with esbuild (as `svc build` does), with
// "svc" resolved to svc-capture.mjs, then the SDK's hyperparametersOf and the
// server's engineHyperparameters turn the createTrainer options into the
// engine's TrainHyperparameters. Nothing is copied from the template by hand.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { engineHyperparameters } from "../../packages/server/dist/src/engine-hyperparameters.js";
import { hyperparametersOf } from "../../packages/svc/dist/src/sdk/trainer-options.js";

const captureUrl = pathToFileURL(fileURLToPath(new URL("svc-capture.mjs", import.meta.url))).href;

/**
 * @param {string} templateDir e.g. templates/ticket-triage
 * @returns {Promise<{ name: string, model: string, trainPath: string, evalPath: string | null,
 *   hyperparameters: import("@svc/engine").TrainHyperparameters }>}
 */
export async function readTemplateConfig(templateDir) {
  const root = resolve(templateDir);
  const out = mkdtempSync(join(tmpdir(), "svc-template-"));
  try {
    const outfile = join(out, "index.mjs");
    await esbuild.build({
      absWorkingDir: root,
      entryPoints: [join(root, "src", "svc", "index.ts")],
      outfile,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      logLevel: "silent",
      packages: "external",
      plugins: [
        {
          name: "svc-capture",
          setup(build) {
            build.onResolve({ filter: /^svc$/ }, () => ({ path: captureUrl, external: true }));
          },
        },
      ],
    });
    const mod = await import(pathToFileURL(outfile).href);
    const manifest = mod.default ?? mod.svc;
    const options = manifest?.trainer?.options;
    if (!options) throw new Error(`${templateDir}/src/svc/index.ts: no createSvc({ trainer }) export`);
    const fileOf = (field, d) => {
      if (d.type !== "file")
        throw new Error(`${templateDir}: ${field} is ${d.type}; only file datasets are read`);
      return resolve(root, d.path);
    };
    return {
      name: options.name,
      model: options.model,
      trainPath: fileOf("dataset", options.dataset),
      evalPath: options.evalDataset ? fileOf("evalDataset", options.evalDataset) : null,
      hyperparameters: engineHyperparameters(hyperparametersOf(options)),
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
