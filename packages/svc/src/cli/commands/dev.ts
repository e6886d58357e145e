// svc dev: Studio. The Studio engineer's runDevCommand does the work; it is
// loaded lazily so the CLI starts (and compiles) without it.
import { type Command, UsageError } from "../args.js";

type DevModule = { runDevCommand?: (argv: string[]) => Promise<number> };

export const devCommand: Command = {
  name: "dev",
  summary: "start Studio (http://localhost:4000) for this project",
  usage: [
    "Usage: svc dev [--port <port>]",
    "",
    "Starts Studio on http://localhost:<port> (default 4000), loopback only, with a",
    "new CSRF token at every launch. It stops when this command stops; jobs go on.",
    "",
    "Options:",
    "  --port <port>  port to listen on (default 4000)",
  ].join("\n"),
  async run(argv) {
    const port = argv.indexOf("--port");
    if (port !== -1 && !/^\d+$/.test(argv[port + 1] ?? ""))
      throw new UsageError("--port: expected a port number");
    const specifier = "../../studio/dev-command.js";
    let mod: DevModule;
    try {
      mod = (await import(specifier)) as DevModule;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") {
        throw new Error("Studio is not part of this build of svc yet (no studio/dev-command.js)");
      }
      throw err;
    }
    if (typeof mod.runDevCommand !== "function")
      throw new Error("Studio's dev command is missing runDevCommand");
    return mod.runDevCommand(argv);
  },
};
