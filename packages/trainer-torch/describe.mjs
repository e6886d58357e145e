#!/usr/bin/env node
// Prints the engine's block description of a config.json (a file, a model
// folder, or "-" for the JSON on stdin): the engine reads it, refusing any key
// it would compute differently, so the torch backend runs exactly the model
// the engine would. Used by svc_trainer.describe for standalone runs (bench,
// tools); the worker builds the same description in-process (torch-job.ts).
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseModelConfig } from "@svc/engine";
import { blockDescription } from "../server/dist/src/worker/torch-job.js";

const source = process.argv[2];
if (!source) {
  console.error("usage: node describe.mjs <config.json | model folder | ->");
  process.exit(2);
}
const file =
  source === "-" ? "/dev/stdin" : statSync(source).isDirectory() ? join(source, "config.json") : source;
try {
  const config = parseModelConfig(
    JSON.parse(readFileSync(file, "utf8")),
    source === "-" ? "config.json" : file,
  );
  process.stdout.write(`${JSON.stringify(blockDescription(config))}\n`);
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
