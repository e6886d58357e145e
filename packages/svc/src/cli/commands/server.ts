// svc server [...] | status | stop, and svc worker: the backend lives in
// @svc/server; these commands hand over to it or manage the background copy
// that commands start on demand (pid/port file ~/.svc/server/server.json).
import {
  localServerPaths,
  localServerStatus,
  removeLocalServerRecord,
  stopLocalServer,
  writeLocalServerRecord,
} from "../../sdk/local-server.js";
import { type Command, wantsHelp } from "../args.js";

// Loaded on first use: commands that never run the backend start without it.
const serverModule = () => import("@svc/server");

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
      const who =
        s.pid !== null
          ? `background server pid ${s.pid}`
          : s.stalePid !== null
            ? `stale pid file: background server pid ${s.stalePid} died without a clean exit`
            : "no background server started by svc";
      process.stdout.write(`${s.url}: ${s.healthy ? "healthy" : "not answering"} (${who}; log: ${s.log})\n`);
      return s.healthy ? 0 : 1;
    }
    if (argv[0] === "stop") {
      const stopped = await stopLocalServer();
      process.stdout.write(
        stopped
          ? "stopped the background server\n"
          : `no background server running (pid file ${localServerPaths().record})\n`,
      );
      return 0;
    }
    const mod = await serverModule();
    if (wantsHelp(argv)) process.stdout.write(`${serverCommand.usage}\n\n`);
    if (process.env.SVC_SERVER_BACKGROUND !== "1") return mod.runServerCommand(argv);
    return runRecorded(() => mod.runServerCommand(argv));
  },
};

/**
 * The server svc started in the background records its pid and URLs in
 * ~/.svc/server/server.json once it listens and removes the file when it exits
 * cleanly; a file left behind marks a crash (local-server.ts). runServerCommand
 * does not hand back its listening address, so this reads it from the server's
 * own machine-readable ready line.
 */
async function runRecorded(run: () => Promise<number>): Promise<number> {
  const write = process.stdout.write.bind(process.stdout);
  let pending = "";
  let recorded: Promise<void> | null = null;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (!recorded) {
      pending += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
      const m = /^svc-server-ready (.+)$/m.exec(pending);
      if (m) {
        const ready = JSON.parse(m[1]) as { apiUrl: string; edgeUrl: string };
        recorded = writeLocalServerRecord({
          pid: process.pid,
          apiUrl: ready.apiUrl,
          edgeUrl: ready.edgeUrl,
          startedAt: new Date().toISOString(),
        }).catch((err) => {
          process.stderr.write(`svc server: could not write its pid file: ${(err as Error).message}\n`);
        });
        pending = "";
      }
    }
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  try {
    return await run();
  } finally {
    process.stdout.write = write;
    await recorded;
    // Only a clean return gets here: a crash leaves the file behind, to be recognised as stale.
    await removeLocalServerRecord(process.pid);
  }
}

export const workerCommand: Command = {
  name: "worker",
  summary: "run a training worker that claims queued jobs from the database",
  usage: "Usage: svc worker [options]   (svc worker --help lists its options)",
  async run(argv) {
    const mod = await serverModule();
    return mod.runWorkerCommand(argv);
  },
};
