#!/usr/bin/env node
// The `svc` command: runs the compiled CLI (npm run build compiles it).
import { main } from "../dist/src/cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`svc: ${err?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
