// Validates an uploaded JSONL file: every line a training row (the engine's
// parseDataset), or, when its first row is a preference pair, every line a pair
// (parsePreferenceDataset: method "dpo", docs/post-training.md), or, when its
// first row's messages end before the answer, every line a GRPO prompt
// (parsePromptDataset: method "grpo"). A large file takes a while to parse, and its rows are garbage
// at once, so files over INLINE_LIMIT are parsed on a worker thread: an upload
// never holds the event loop (and its collector) for the other requests.
import { createReadStream } from "node:fs";
import { Worker } from "node:worker_threads";
import {
  isEngineError,
  isPreferenceRow,
  isPromptRow,
  parseDataset,
  parsePreferenceDataset,
  parsePromptDataset,
} from "@svc/engine";
import { lineOfInvalidUtf8, utf8Text } from "./body.js";

/** Files up to this size are parsed on the event loop (a few milliseconds). */
export const INLINE_LIMIT = 1024 * 1024;

/** The format a file's first row declares: chat rows (SFT), preference pairs (DPO) or prompts (GRPO). */
export type DatasetFormat = "sft" | "preference" | "prompts";

/** The format of JSONL text, read from its first non-blank line (the whole file is checked under it). */
export function datasetFormatOf(text: string): DatasetFormat {
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf("\n", start);
    const line = text.slice(start, end < 0 ? text.length : end);
    start = end < 0 ? text.length : end + 1;
    if (line.trim().length === 0) continue;
    try {
      const row: unknown = JSON.parse(line);
      return isPreferenceRow(row) ? "preference" : isPromptRow(row) ? "prompts" : "sft";
    } catch {
      return "sft"; // not JSON: parseDataset names the line
    }
  }
  return "sft";
}

/** The file's row count and format, or its first problem (the engine's message, naming `name` and the line). */
export type DatasetCheck =
  | { rows: number; format: DatasetFormat }
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
    const format = datasetFormatOf(text);
    const parse = { preference: parsePreferenceDataset, prompts: parsePromptDataset, sft: parseDataset }[
      format
    ];
    const rows = parse(text, { source: name }).length;
    return { rows, format };
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

/**
 * The format of a stored dataset file (checked whole at upload), from its first
 * non-blank line: a job checks it against its method without reading the rest.
 */
export async function storedDatasetFormat(path: string): Promise<DatasetFormat> {
  let head = "";
  for await (const chunk of createReadStream(path, { encoding: "utf8", highWaterMark: 64 * 1024 })) {
    head += chunk as string;
    const firstRow = /\S[^\n]*/.exec(head);
    if (firstRow && firstRow.index + firstRow[0].length < head.length) break;
  }
  return datasetFormatOf(head);
}
