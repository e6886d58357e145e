// Validates an uploaded JSONL file: every line a training row (the engine's
// parseDataset). A large file takes a while to parse, and its rows are garbage
// at once, so files over INLINE_LIMIT are parsed on a worker thread: an upload
// never holds the event loop (and its collector) for the other requests.
import { Worker } from "node:worker_threads";
import { isEngineError, parseDataset } from "@svc/engine";
import { lineOfInvalidUtf8, utf8Text } from "./body.js";

/** Files up to this size are parsed on the event loop (a few milliseconds). */
export const INLINE_LIMIT = 1024 * 1024;

/** The file's row count, or its first problem (the engine's message, naming `name` and the line). */
export type DatasetCheck =
  | { rows: number }
  | { problem: "invalid_dataset"; message: string; line?: number }
  | { problem: "invalid_utf8"; line: number };

export interface DatasetCheckRequest {
  bytes: Uint8Array;
  name: string;
}

export function checkDataset({ bytes, name }: DatasetCheckRequest): DatasetCheck {
  const text = utf8Text(bytes);
  if (text === null) return { problem: "invalid_utf8", line: lineOfInvalidUtf8(Buffer.from(bytes)) };
  try {
    return { rows: parseDataset(text, { source: name }).length };
  } catch (error) {
    if (!isEngineError(error)) throw error;
    return { problem: "invalid_dataset", message: error.message, line: error.line };
  }
}

/** checkDataset, on a worker thread for a file over INLINE_LIMIT. */
export function checkDatasetOffLoop(bytes: Buffer, name: string): Promise<DatasetCheck> {
  if (bytes.length <= INLINE_LIMIT) return Promise.resolve(checkDataset({ bytes, name }));
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./dataset-validation-worker.js", import.meta.url), {
      workerData: { bytes, name } satisfies DatasetCheckRequest,
    });
    worker.once("message", (check: DatasetCheck) => {
      resolve(check);
      void worker.terminate();
    });
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the dataset check thread exited with code ${code}`)));
  });
}
