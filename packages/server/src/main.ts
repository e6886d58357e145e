// Development entry: `node dist/src/main.js server|worker [flags]` (the svc
// CLI calls the same functions).
import { runServerCommand, runWorkerCommand } from "./cli.js";

const [command, ...rest] = process.argv.slice(2);
const commands: Record<string, (argv: string[]) => Promise<number>> = {
  server: runServerCommand,
  worker: runWorkerCommand,
};
const run = command ? commands[command] : undefined;
if (!run) {
  console.error("usage: node main.js server|worker [flags]");
  process.exit(2);
}
process.exit(await run(rest));
