// exportModel: a job's adapter (final or a checkpoint) or a base model,
// written by the server as a PEFT folder, a merged Hugging Face folder or a
// GGUF file with an Ollama Modelfile, and downloaded to `out`: a folder, or
// for gguf a path ending in .gguf (the Modelfile goes beside it, its FROM
// naming that file).
import { createWriteStream, mkdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ExportFormat, ExportInfo, ExportProgress } from "@svc/wire";
import type { CloudApi } from "./cloud-api.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** An export's files are plain names in one folder (the server serves no deeper path). */
const SAFE_FILE_NAME = /^[\w.-]{1,255}$/;

export interface ExportModelOptions {
  /** A job id (its final adapter, or `checkpoint`'s) or a base model name. */
  source: string;
  checkpoint?: number;
  format: ExportFormat;
  quant?: string;
  out: string;
  /** Called as the server exports (its stage and count) and as each file downloads. */
  onProgress?: (progress: {
    stage: "exporting" | "downloading";
    server?: ExportProgress | null;
    file?: string;
    bytes?: number;
    totalBytes?: number;
  }) => void;
  signal?: AbortSignal;
  /** How often to ask the server how the export stands (default 500 ms). */
  pollMs?: number;
}

/** The server's export failed (its error code and message). */
export class ExportFailedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ExportedFiles {
  export: ExportInfo;
  /** Absolute paths of the files written locally. */
  files: string[];
}

export async function exportModel(client: CloudApi, options: ExportModelOptions): Promise<ExportedFiles> {
  const isJob = UUID.test(options.source);
  if (!isJob && options.checkpoint !== undefined) {
    throw new Error(`--checkpoint needs a job id, not the base model ${JSON.stringify(options.source)}`);
  }
  let info = await client.createExport({
    ...(isJob
      ? {
          adapter:
            options.checkpoint === undefined
              ? { kind: "final", jobId: options.source }
              : { kind: "checkpoint", jobId: options.source, step: options.checkpoint },
        }
      : { baseModel: options.source }),
    format: options.format,
    ...(options.quant === undefined ? {} : { quant: options.quant }),
  });
  options.onProgress?.({ stage: "exporting", server: info.progress });
  while (info.status === "running") {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    options.signal?.throwIfAborted();
    info = await client.getExport(info.id);
    options.onProgress?.({ stage: "exporting", server: info.progress });
  }
  if (info.status === "failed") {
    throw new ExportFailedError(
      info.error?.code ?? "export_failed",
      info.error?.message ?? "the export failed",
    );
  }
  // The names come from the server: one that is not a plain file name would write outside `out`.
  const unsafe = info.files.find((f) => !SAFE_FILE_NAME.test(f.path) || /^\.+$/.test(f.path));
  if (unsafe)
    throw new ExportFailedError(
      "invalid_export_file",
      `the server named an export file ${JSON.stringify(unsafe.path)}, which is not a plain file name; nothing was written`,
    );
  const singleFile = info.format === "gguf" && options.out.endsWith(".gguf");
  const dir = singleFile ? dirname(options.out) : options.out;
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const gguf = info.files.find((f) => f.path.endsWith(".gguf"));
  for (const file of info.files) {
    const target = singleFile && file === gguf ? options.out : join(dir, file.path);
    const response = await client.openExportFile(info.id, file.path, { signal: options.signal });
    let bytes = 0;
    const progress = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.length;
        options.onProgress?.({ stage: "downloading", file: file.path, bytes, totalBytes: file.bytes });
        controller.enqueue(chunk);
      },
    });
    const partial = `${target}.part`;
    try {
      const body = response.body ?? new ReadableStream();
      if (file.path === "Modelfile" && singleFile && gguf) {
        // the Modelfile's FROM names the GGUF file by the name it has here
        const text = (await response.text()).replace(
          `FROM ./${gguf.path}`,
          `FROM ./${basename(options.out)}`,
        );
        await pipeline(Readable.from([text]), createWriteStream(partial));
      } else {
        await pipeline(Readable.fromWeb(body.pipeThrough(progress) as never), createWriteStream(partial));
      }
      renameSync(partial, target);
    } catch (error) {
      rmSync(partial, { force: true });
      throw error;
    }
    files.push(target);
  }
  return { export: info, files };
}
