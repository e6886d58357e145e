// svc build: bundle src/svc/index.ts into .svc/build/index.mjs and check that it
// exposes a trainer.
import { BUNDLE_PATH, buildBundle, loadManifest } from "../../sdk/manifest.js";
import { defaultProjectDir } from "../../sdk/session.js";
import { type Command, parse } from "../args.js";

export const buildCommand: Command = {
  name: "build",
  summary: "bundle src/svc/index.ts into .svc/build/index.mjs",
  usage: [
    "Usage: svc build",
    "",
    "Bundles src/svc/index.ts with esbuild into .svc/build/index.mjs (what svc start",
    "and Studio run). Errors are printed as file:line:col message.",
  ].join("\n"),
  async run(argv) {
    parse(argv, {}, 0);
    const projectDir = defaultProjectDir();
    const result = await buildBundle(projectDir);
    if (!result.ok) {
      for (const line of result.errors) process.stderr.write(`${line}\n`);
      return 1;
    }
    const manifest = await loadManifest(projectDir);
    if (!manifest.trainer) {
      process.stdout.write(
        `built ${BUNDLE_PATH}; no trainer yet: add createTrainer(...) and pass it to createSvc\n`,
      );
    } else {
      process.stdout.write(`built ${BUNDLE_PATH} (trainer: ${manifest.trainer.name})\n`);
    }
    return 0;
  },
};
