// `svc dev`: serves Studio on 127.0.0.1 (default port 4000; the next free port
// when 4000 is taken and --port was not given) with a fresh CSRF token, until
// SIGINT / SIGTERM.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { createStudioApp } from "./app.js";
import { ensureCloudApi } from "./cloud-session.js";
import { createStudioToken } from "./security.js";

export const DEFAULT_STUDIO_PORT = 4000;
/** How many ports after 4000 are tried when it is busy. */
export const PORT_FALLBACK_TRIES = 20;

export interface DevOptions {
  port: number;
  explicitPort: boolean;
}

export function parseDevArgs(argv: string[]): DevOptions {
  let port = DEFAULT_STUDIO_PORT;
  let explicitPort = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = arg === "--port" ? argv[++i] : arg.startsWith("--port=") ? arg.slice(7) : null;
    if (value === null) throw new Error(`svc dev: unknown argument ${arg} (usage: svc dev [--port <port>])`);
    if (value === undefined || !/^\d+$/.test(value) || Number(value) > 65535) {
      throw new Error(`svc dev: --port expects a port number from 0 to 65535, got ${value ?? "nothing"}`);
    }
    port = Number(value);
    explicitPort = true;
  }
  return { port, explicitPort };
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off("listening", onListening);
      reject(err);
    };
    const onListening = () => {
      server.off("error", onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, "127.0.0.1");
  });
}

/** Listens on loopback; walks up from 4000 only when the port was not chosen explicitly. */
export async function listenStudio(server: Server, options: DevOptions): Promise<number> {
  const tries = options.explicitPort ? 1 : PORT_FALLBACK_TRIES;
  for (let i = 0; i < tries; i++) {
    try {
      return await listen(server, options.port + i);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
      if (options.explicitPort) {
        throw new Error(`svc dev: port ${options.port} is already in use; choose another with --port <port>`);
      }
    }
  }
  throw new Error(
    `svc dev: ports ${options.port}-${options.port + tries - 1} are all in use; choose one with --port <port>`,
  );
}

export async function runDevCommand(argv: string[]): Promise<number> {
  let options: DevOptions;
  try {
    options = parseDevArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const projectDir = process.cwd();
  const token = createStudioToken();
  const server = createAdaptorServer({ fetch: createStudioApp({ token, projectDir }).fetch }) as Server;
  let port: number;
  try {
    port = await listenStudio(server, options);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`Studio: http://localhost:${port}  (project ${projectDir}; Ctrl-C stops it)\n`);
  // Start the local cloud API early so the first page load does not wait for it.
  ensureCloudApi().catch((err) =>
    process.stderr.write(`svc dev: cloud API not available yet: ${err.message}\n`),
  );

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      server.close(() => resolve());
      // Open event streams would keep close() waiting.
      server.closeAllConnections?.();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  return 0;
}
