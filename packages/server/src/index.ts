export const SERVER_VERSION = "0.1.0";
export { runServerCommand, runWorkerCommand, SERVER_USAGE, WORKER_USAGE } from "./cli.js";
export * as hub from "./hub/index.js";
export {
  engineImplements,
  readRawConfig,
  TRANSFORMERS_FALLBACK_DOCS,
  TRANSFORMERS_FALLBACK_SETTINGS,
} from "./models/transformers-only-model.js";
export { PortInUseError, type ServerHandle, type ServerOptions, startServer } from "./server.js";
