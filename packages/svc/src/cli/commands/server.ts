// svc server [...] | status | stop, and svc worker: the backend lives in
// @svc/server; these commands hand over to it or manage the background copy
// that commands start on demand (pid file in ~/.svc/server).
import { localServerPaths, localServerStatus, stopLocalServer } from "../../sdk/config.js";
import { type Command, wantsHelp } from "../args.js";

type ServerModule = {
  runServerCommand?: (argv: string[]) => Promise<number>;
  runWorkerCommand?: (argv: string[]) => Promise<number>;
};

async function serverModule(): Promise<ServerModule> {
  const specifier = "@svc/server";
  return (await import(specifier)) as ServerModule;
}

export const serverCommand: Command = {
  name: "server",
  summary: "run the backend (cloud API + edge) in the foreground; status | stop manage the background one",
  usage: [
    "Usage: svc server [options]   run the backend in the foreground (svc server --help lists its options)",
    "       svc server status      is the background server running and healthy?",
    "       svc server stop        stop the background server",
    "",
    "Commands that need the backend start it in the background when SVC_CLOUD_API_URL",
    "is unset and nothing answers on 127.0.0.1:4100 (log: ~/.svc/server/server.log).",
  ].join("\n"),
  async run(argv) {
    if (argv[0] === "status") {
      const s = await localServerStatus();
      const who = s.pid !== null ? `background server pid ${s.pid}` : "no background server started by svc";
      process.stdout.write(`${s.url}: ${s.healthy ? "healthy" : "not answering"} (${who}; log: ${s.log})\n`);
      return s.healthy ? 0 : 1;
    }
    if (argv[0] === "stop") {
      const stopped = await stopLocalServer();
      process.stdout.write(
        stopped
          ? "stopped the background server\n"
          : `no background server running (pid file ${localServerPaths().pid})\n`,
      );
      return 0;
    }
    const mod = await serverModule();
    if (wantsHelp(argv)) process.stdout.write(`${serverCommand.usage}\n\n`);
    if (typeof mod.runServerCommand !== "function")
      throw new Error("this build of @svc/server has no runServerCommand");
    return mod.runServerCommand(argv);
  },
};

export const workerCommand: Command = {
  name: "worker",
  summary: "run a training worker that claims queued jobs from the database",
  usage: "Usage: svc worker [options]   (svc worker --help lists its options)",
  async run(argv) {
    const mod = await serverModule();
    if (typeof mod.runWorkerCommand !== "function")
      throw new Error("this build of @svc/server has no runWorkerCommand");
    return mod.runWorkerCommand(argv);
  },
};
