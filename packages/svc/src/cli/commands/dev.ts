// svc dev: Studio. runDevCommand does the work; it is loaded on first use so
// the other commands start without Studio's server code.
import { type Command, UsageError } from "../args.js";

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
    const { runDevCommand } = await import("../../studio/dev-command.js");
    return runDevCommand(argv);
  },
};
