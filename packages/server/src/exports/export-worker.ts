// The worker thread of ExportRunner: one engine export, its progress posted as it goes.
import { parentPort, workerData } from "node:worker_threads";
import { type ExportOptions, exportModel } from "@svc/engine";

const options = workerData as Omit<ExportOptions, "onProgress">;
exportModel({ ...options, onProgress: (progress) => parentPort?.postMessage({ progress }) }).then(
  (result) => parentPort?.postMessage({ result }),
  (error: Error & { code?: string }) =>
    parentPort?.postMessage({ error: { message: error.message, code: error.code ?? "export_failed" } }),
);
