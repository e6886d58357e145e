// A worker thread of profileDatasetFile: loads the model folder's tokenizer once,
// then measures each chunk of rows it is sent (prompt and answer tokens per row).
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { isEngineError } from "../errors.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { DatasetRow } from "../types.js";
import { measureRow } from "./dataset-profile.js";

export interface ProfileChunkRequest {
  /** 0-based index of the chunk's first row in the file. */
  from: number;
  rows: DatasetRow[];
}

export type ProfileChunkReply =
  | { type: "lengths"; from: number; lengths: Int32Array }
  | { type: "error"; row: number; code: string; message: string };

if (!isMainThread && parentPort) {
  const port = parentPort;
  const tokenizer = loadTokenizer((workerData as { modelDir: string }).modelDir);
  port.on("message", async ({ from, rows }: ProfileChunkRequest) => {
    const measure = await tokenizer;
    const lengths = new Int32Array(2 * rows.length);
    for (let i = 0; i < rows.length; i++) {
      try {
        [lengths[2 * i], lengths[2 * i + 1]] = measureRow(measure, rows[i]);
      } catch (error) {
        const code = isEngineError(error) ? error.code : "internal";
        port.postMessage({
          type: "error",
          row: from + i + 1,
          code,
          message: (error as Error).message ?? String(error),
        } satisfies ProfileChunkReply);
        return;
      }
    }
    port.postMessage({ type: "lengths", from, lengths } satisfies ProfileChunkReply, [lengths.buffer]);
  });
}
