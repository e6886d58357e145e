// Exports run on a worker thread (merging and quantizing a model takes
// seconds to minutes of CPU: the API keeps answering meanwhile), one at a time
// (each holds a model's weights in memory), into <data dir>/exports/<id>/ with
// a manifest.json that says whose export it is. A failed export leaves nothing.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { ExportOptions, ExportResult } from "@svc/engine";
import type { DataDir } from "../data-dir.js";
import { ApiError } from "../http/api-error.js";
import { nowIso, UUID_PATTERN, uuidv7 } from "../ids.js";
import type { ExportInfo } from "../wire.js";

const MANIFEST = "manifest.json";

export interface ExportRequest {
  projectId: string;
  format: ExportInfo["format"];
  quant?: string;
  jobId: string | null;
  step: number | null;
  baseModel: string;
  modelDir: string;
  adapterDir: string | null;
}

function runOnWorker(options: Omit<ExportOptions, "onProgress">): Promise<ExportResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./export-worker.js", import.meta.url), { workerData: options });
    worker.on("message", (message: { result?: ExportResult; error?: { message: string; code: string } }) => {
      if (message.result) resolve(message.result);
      else if (message.error) {
        const invalid =
          message.error.code === "invalid_argument" || message.error.code === "unsupported_architecture";
        reject(new ApiError(invalid ? 400 : 500, message.error.code, message.error.message));
      }
    });
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the export thread exited with code ${code}`)));
  });
}

export class ExportRunner {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly dataDir: DataDir) {}

  private dirOf(id: string): string {
    return this.dataDir.abs(join("exports", id));
  }

  /** Runs one export after the ones before it; resolves with what was written. */
  run(request: ExportRequest): Promise<ExportInfo> {
    const next = this.queue.then(() => this.runNow(request));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async runNow(request: ExportRequest): Promise<ExportInfo> {
    const id = uuidv7();
    const dir = this.dirOf(id);
    try {
      const result = await runOnWorker({
        baseDir: request.modelDir,
        adapterDir: request.adapterDir,
        format: request.format,
        quant: request.quant,
        out: dir,
        name: request.jobId ? `${request.baseModel} (job ${request.jobId})` : request.baseModel,
      });
      const info: ExportInfo = {
        id,
        projectId: request.projectId,
        format: request.format,
        quant: result.quant,
        jobId: request.jobId,
        step: request.step,
        baseModel: request.baseModel,
        files: result.files.map((path) => ({ path, bytes: statSync(join(dir, path)).size })),
        warnings: result.warnings,
        createdAt: nowIso(),
      };
      writeFileSync(join(dir, MANIFEST), `${JSON.stringify(info, null, 2)}\n`);
      return info;
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** A finished export by id, or null. */
  get(id: string): ExportInfo | null {
    if (!UUID_PATTERN.test(id)) return null;
    const manifest = join(this.dirOf(id), MANIFEST);
    if (!existsSync(manifest)) return null;
    return JSON.parse(readFileSync(manifest, "utf8")) as ExportInfo;
  }

  /** The absolute path of one of an export's files. */
  filePath(info: ExportInfo, file: string): string | null {
    return info.files.some((f) => f.path === file) ? join(this.dirOf(info.id), file) : null;
  }

  remove(id: string): void {
    rmSync(this.dirOf(id), { recursive: true, force: true });
  }
}
