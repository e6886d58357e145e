export const SERVER_VERSION = "0.1.0";
export { runServerCommand, runWorkerCommand, SERVER_USAGE, WORKER_USAGE } from "./cli.js";
export { PortInUseError, type ServerHandle, type ServerOptions, startServer } from "./server.js";
export * as hub from "./hub/index.js";
