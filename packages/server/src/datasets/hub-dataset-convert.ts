// A Hub dataset split's files (Parquet read with hyparquet, JSON Lines, JSON arrays) as the JSONL
// training rows a local file holds, one line per row of the split, checked by
// the engine's parseDataset exactly as an uploaded file is. Errors name the
// row's number in the split (1-based, counted over its files in order) and
// where it came from: `org/ds split "train" row 7 (data/train-00000-of-00001.parquet row 7): ...`.
// It runs on a worker thread (convertHubSplitOffLoop): a large split never
// holds the server's event loop.
import { createReadStream } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { isEngineError, parseDataset } from "@svc/engine";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";
import {
  ColumnShapeError,
  type HubColumnMapping,
  type RowShape,
  RowShapeError,
  resolveRowShape,
  shapeColumns,
  trainingRow,
} from "./hub-dataset-columns.js";

export interface ConvertRequest {
  /** The snapshot folder the files are in. */
  dir: string;
  /** The split's files, relative to `dir`, in order. */
  files: string[];
  columns?: HubColumnMapping;
  /** Names the split in messages: `org/ds split "train"`. */
  label: string;
  /** The most bytes the rows may take as JSONL (the server's dataset size limit). */
  limit: number;
}

export type ConvertResult =
  | { ok: true; jsonl: Uint8Array; rows: number; shape: RowShape; ignoredColumns: string[] }
  | { ok: false; status: 400 | 413; code: string; message: string };

class ConvertError extends Error {
  constructor(
    readonly status: 400 | 413,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Parquet int64 columns read as BigInt, which JSON.stringify refuses. */
const jsonValue = (_key: string, value: unknown) => (typeof value === "bigint" ? Number(value) : value);

/** Where each row of the split came from: its file and its row (Parquet) or line (JSONL) there. */
class RowOrigins {
  private readonly starts: { row: number; file: string; unit: "row" | "line" | "item"; lines?: number[] }[] =
    [];

  add(firstRow: number, file: string, unit: "row" | "line" | "item", lines?: number[]): void {
    this.starts.push({ row: firstRow, file, unit, lines });
  }

  describe(row: number): string {
    let at = this.starts[0];
    for (const start of this.starts) if (start.row <= row) at = start;
    if (!at) return "";
    const index = row - at.row;
    const number = at.lines ? at.lines[index] : index + 1;
    return ` (${at.file} ${at.unit} ${number})`;
  }
}

class SplitWriter {
  private readonly chunks: string[] = [];
  private bytes = 0;
  rows = 0;
  shape: RowShape | null = null;
  ignoredColumns: string[] = [];
  readonly origins = new RowOrigins();

  constructor(private readonly request: ConvertRequest) {}

  /** Fixes the shape from the first file's columns; later files must have the shape's columns. */
  shapeFor(file: string, columns: string[]): RowShape {
    if (!this.shape) {
      try {
        this.shape = resolveRowShape(columns, this.request.columns);
      } catch (error) {
        if (!(error instanceof ColumnShapeError)) throw error;
        throw new ConvertError(
          400,
          "hub_dataset_columns",
          `${this.request.label} (${file}): ${error.message}`,
        );
      }
      const used = shapeColumns(this.shape);
      this.ignoredColumns = columns.filter((c) => !used.includes(c));
    }
    const missing = shapeColumns(this.shape).filter((c) => !columns.includes(c));
    if (missing.length > 0)
      throw new ConvertError(
        400,
        "hub_dataset_columns",
        `${this.request.label}: ${file} has no column ${missing.map((c) => `"${c}"`).join(", ")} (its columns: ${columns.map((c) => `"${c}"`).join(", ")})`,
      );
    return this.shape;
  }

  push(record: Record<string, unknown>): void {
    const row = this.rows + 1;
    let line: string;
    try {
      line = `${JSON.stringify(trainingRow(record, this.shape!, row), jsonValue)}\n`;
    } catch (error) {
      if (!(error instanceof RowShapeError)) throw error;
      throw new ConvertError(
        400,
        "invalid_dataset",
        `${this.request.label} row ${row}${this.origins.describe(row)}: ${error.message}`,
      );
    }
    this.bytes += Buffer.byteLength(line);
    if (this.bytes > this.request.limit)
      throw new ConvertError(
        413,
        "payload_too_large",
        `${this.request.label}: the split's rows exceed ${this.request.limit} bytes as JSONL (the server's dataset size limit, --max-dataset-bytes)`,
      );
    this.chunks.push(line);
    this.rows = row;
  }

  text(): string {
    return this.chunks.join("");
  }
}

async function readParquet(writer: SplitWriter, dir: string, file: string, label: string): Promise<void> {
  const buffer = await asyncBufferFromFile(join(dir, file));
  let metadata: Awaited<ReturnType<typeof parquetMetadataAsync>>;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (error) {
    throw new ConvertError(
      400,
      "hub_dataset_unreadable",
      `${label}: ${file} is not a readable Parquet file (${(error as Error).message})`,
    );
  }
  const columns = parquetSchema(metadata).children.map((child) => child.element.name);
  const shape = writer.shapeFor(file, columns);
  writer.origins.add(writer.rows + 1, file, "row");
  // One row group at a time: a file's rows are never all in memory as objects at once.
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    let records: Record<string, unknown>[];
    try {
      records = await parquetReadObjects({
        file: buffer,
        metadata,
        columns: shapeColumns(shape),
        rowStart,
        rowEnd,
      });
    } catch (error) {
      throw new ConvertError(
        400,
        "hub_dataset_unreadable",
        `${label}: ${file} could not be read (${(error as Error).message}; svc reads uncompressed and Snappy-compressed Parquet)`,
      );
    }
    for (const record of records) writer.push(record);
    rowStart = rowEnd;
  }
}

/**
 * A file's lines as bytes, LF or CRLF ended: decoded one by one so that bytes
 * that are not UTF-8 are refused (a string stream would put U+FFFD in them).
 */
async function* byteLines(path: string): AsyncGenerator<Buffer> {
  let rest = Buffer.alloc(0);
  for await (const chunk of createReadStream(path)) {
    let data = Buffer.concat([rest, chunk as Buffer]);
    for (let at = data.indexOf(0x0a); at >= 0; at = data.indexOf(0x0a)) {
      yield data.subarray(0, at > 0 && data[at - 1] === 0x0d ? at - 1 : at);
      data = data.subarray(at + 1);
    }
    rest = Buffer.from(data);
  }
  if (rest.length > 0) yield rest.at(-1) === 0x0d ? rest.subarray(0, -1) : rest;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

async function readJsonl(writer: SplitWriter, dir: string, file: string, label: string): Promise<void> {
  const lines: number[] = [];
  writer.origins.add(writer.rows + 1, file, "line", lines);
  let lineNumber = 0;
  for await (const bytes of byteLines(join(dir, file))) {
    lineNumber++;
    const where = `${label} row ${writer.rows + 1} (${file} line ${lineNumber})`;
    let text: string;
    try {
      // ignoreBOM: false drops a byte-order mark at the start of each decoded line, as local files do for the first.
      text = utf8.decode(bytes);
    } catch {
      throw new ConvertError(400, "invalid_dataset", `${where}: not valid UTF-8 text`);
    }
    if (text.trim() === "") continue;
    lines.push(lineNumber);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ConvertError(
        400,
        "invalid_dataset",
        `${where}: not valid JSON (${(error as Error).message})`,
      );
    }
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new ConvertError(400, "invalid_dataset", `${where}: expected a JSON object`);
    const record = value as Record<string, unknown>;
    if (!writer.shape) writer.shapeFor(file, Object.keys(record));
    writer.push(record);
  }
}

/** Whether a .json file holds one array (Alpaca's `alpaca_data.json`) rather than JSON Lines. */
async function isJsonArray(path: string): Promise<boolean> {
  const handle = await open(path);
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    const head = buffer
      .subarray(0, bytesRead)
      .toString("utf8")
      .replace(/^\uFEFF/, "")
      .trimStart();
    return head.startsWith("[");
  } finally {
    await handle.close();
  }
}

/** A .json file holding an array of row objects: item N (1-based) is the file's row N. */
async function readJsonArray(writer: SplitWriter, dir: string, file: string, label: string): Promise<void> {
  writer.origins.add(writer.rows + 1, file, "item");
  let text: string;
  try {
    text = utf8.decode(await readFile(join(dir, file)));
  } catch {
    throw new ConvertError(400, "invalid_dataset", `${label}: ${file} is not valid UTF-8 text`);
  }
  let items: unknown;
  try {
    items = JSON.parse(text);
  } catch (error) {
    throw new ConvertError(
      400,
      "invalid_dataset",
      `${label}: ${file} is not valid JSON (${(error as Error).message})`,
    );
  }
  for (const [i, item] of (items as unknown[]).entries()) {
    if (typeof item !== "object" || item === null || Array.isArray(item))
      throw new ConvertError(
        400,
        "invalid_dataset",
        `${label} row ${writer.rows + 1} (${file} item ${i + 1}): expected a JSON object`,
      );
    const record = item as Record<string, unknown>;
    if (!writer.shape) writer.shapeFor(file, Object.keys(record));
    writer.push(record);
  }
}

/** The split's rows as checked JSONL, or the first problem (status, code, message naming the row). */
export async function convertHubSplit(request: ConvertRequest): Promise<ConvertResult> {
  const writer = new SplitWriter(request);
  try {
    for (const file of request.files) {
      const lower = file.toLowerCase();
      if (lower.endsWith(".parquet")) await readParquet(writer, request.dir, file, request.label);
      else if (lower.endsWith(".json") && (await isJsonArray(join(request.dir, file))))
        await readJsonArray(writer, request.dir, file, request.label);
      else await readJsonl(writer, request.dir, file, request.label);
    }
    if (writer.rows === 0 || !writer.shape)
      throw new ConvertError(400, "invalid_dataset", `${request.label}: the split has no rows`);
    const text = writer.text();
    const source = "split";
    try {
      parseDataset(text, { source });
    } catch (error) {
      if (!isEngineError(error) || error.line === undefined) throw error;
      const problem = error.message.slice(`${source} line ${error.line}: `.length);
      throw new ConvertError(
        400,
        "invalid_dataset",
        `${request.label} row ${error.line}${writer.origins.describe(error.line)}: ${problem}`,
      );
    }
    const jsonl = new Uint8Array(Buffer.from(text));
    return { ok: true, jsonl, rows: writer.rows, shape: writer.shape, ignoredColumns: writer.ignoredColumns };
  } catch (error) {
    if (error instanceof ConvertError)
      return { ok: false, status: error.status, code: error.code, message: error.message };
    throw error;
  }
}

/** convertHubSplit on a worker thread. */
export function convertHubSplitOffLoop(request: ConvertRequest): Promise<ConvertResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./hub-dataset-convert-worker.js", import.meta.url), {
      workerData: request,
    });
    worker.once("message", (result: ConvertResult) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once("error", reject);
    worker.once("exit", (code) =>
      reject(new Error(`the dataset conversion thread exited with code ${code}`)),
    );
  });
}
