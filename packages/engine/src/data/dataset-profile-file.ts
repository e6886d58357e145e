// Profiles a JSONL file for a model folder's tokenizer. Tokenization is the
// cost (every row rendered and labelled as training does), so rows go in chunks
// to worker threads, each with its own tokenizer; small files are measured on
// this thread. The result is dataset-profile.ts's DatasetProfile.

import { availableParallelism } from "node:os";
import { basename } from "node:path";
import { Worker } from "node:worker_threads";
import { EngineError, isEngineError } from "../errors.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { DatasetRow, Tokenizer } from "../types.js";
import { readDataset } from "./dataset.js";
import { type DatasetProfile, measureRows, summarizeProfile, templateTokens } from "./dataset-profile.js";
import type { ProfileChunkReply, ProfileChunkRequest } from "./dataset-profile-worker.js";
import { rowMessages } from "./examples.js";

/** Rows per chunk handed to a worker (and between progress reports). */
export const PROFILE_CHUNK_ROWS = 256;

export interface ProfileFileOptions {
  /** Worker threads (default: the machine's cores, at most 8); 0 or 1 measures on this thread. */
  threads?: number;
  /** Called after each chunk with the rows measured so far. */
  onProgress?: (rowsDone: number, rows: number) => void;
  signal?: AbortSignal;
  /** The file's name in a row's error (default: its base name). */
  source?: string;
}

export function defaultProfileThreads(): number {
  return Math.max(1, Math.min(8, availableParallelism()));
}

/** A row's error, named by file and row; engine errors keep their code. */
function rowError(source: string, row: number, error: { code: string; message: string }): Error {
  const message = `${source} row ${row}: ${error.message}`;
  if (error.code === "invalid_argument" || error.code === "invalid_dataset")
    return new EngineError(error.code, message);
  return new Error(message);
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function measureHere(
  tokenizer: Tokenizer,
  rows: DatasetRow[],
  lengths: Int32Array,
  source: string,
  options: ProfileFileOptions,
): Promise<void> {
  for (let from = 0; from < rows.length; from += PROFILE_CHUNK_ROWS) {
    options.signal?.throwIfAborted();
    const to = Math.min(rows.length, from + PROFILE_CHUNK_ROWS);
    for (let i = from; i < to; i++) {
      try {
        measureRows(tokenizer, rows, i, i + 1, lengths);
      } catch (error) {
        if (isEngineError(error)) throw rowError(source, i + 1, error);
        throw error;
      }
    }
    options.onProgress?.(to, rows.length);
    await nextTick();
  }
}

function measureOnWorkers(
  modelDir: string,
  rows: DatasetRow[],
  lengths: Int32Array,
  source: string,
  threads: number,
  options: ProfileFileOptions,
): Promise<void> {
  const chunks = Math.ceil(rows.length / PROFILE_CHUNK_ROWS);
  const workers: Worker[] = [];
  let next = 0;
  let done = 0;
  let rowsDone = 0;
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener("abort", onAbort);
      for (const w of workers) void w.terminate();
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = () => finish(options.signal?.reason ?? new Error("aborted"));
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const send = (worker: Worker) => {
      if (next >= chunks) return;
      const from = next++ * PROFILE_CHUNK_ROWS;
      const to = Math.min(rows.length, from + PROFILE_CHUNK_ROWS);
      worker.postMessage({ from, rows: rows.slice(from, to) } satisfies ProfileChunkRequest);
    };
    for (let t = 0; t < Math.min(threads, chunks); t++) {
      const worker = new Worker(new URL("./dataset-profile-worker.js", import.meta.url), {
        workerData: { modelDir },
      });
      workers.push(worker);
      worker.on("message", (reply: ProfileChunkReply) => {
        if (settled) return;
        if (reply.type === "error") {
          finish(rowError(source, reply.row, reply));
          return;
        }
        lengths.set(reply.lengths, 2 * reply.from);
        rowsDone += reply.lengths.length / 2;
        options.onProgress?.(rowsDone, rows.length);
        if (++done === chunks) finish();
        else send(worker);
      });
      worker.on("error", (error) => finish(error));
      worker.on("exit", (code) => {
        if (!settled) finish(new Error(`a profile worker thread exited with code ${code}`));
      });
      send(worker);
    }
  });
}

/**
 * The profile of the JSONL file at `path` for the tokenizer of the model folder
 * `modelDir`. The file is validated first (readDataset's errors); a row the chat
 * template cannot label fails the profile, naming the row.
 */
export async function profileDatasetFile(
  path: string,
  modelDir: string,
  options: ProfileFileOptions = {},
): Promise<DatasetProfile> {
  const source = options.source ?? basename(path);
  const [rows, tokenizer] = await Promise.all([readDataset(path), loadTokenizer(modelDir)]);
  options.signal?.throwIfAborted();
  const lengths = new Int32Array(2 * rows.length);
  const threads = options.threads ?? defaultProfileThreads();
  if (threads <= 1 || rows.length <= 2 * PROFILE_CHUNK_ROWS) {
    await measureHere(tokenizer, rows, lengths, source, options);
  } else {
    await measureOnWorkers(modelDir, rows, lengths, source, threads, options);
  }
  const withSystem = rows.some((r) => rowMessages(r).some((m) => m.role === "system"));
  return summarizeProfile(rows, lengths, templateTokens(tokenizer, withSystem));
}
