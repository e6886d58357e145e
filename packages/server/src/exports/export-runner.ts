// Exports run on a worker thread (merging and quantizing a model takes
// seconds to minutes of CPU: the API keeps answering meanwhile), one at a time
// (each holds a model's weights in memory), into <data dir>/exports/<id>/. Its
// manifest.json says whose export it is and how it stands: running (with the
// progress this process hears from the worker), ready, or failed (the error
// kept, the files removed). One still running a day on, in no process that
// answers, died with its process and reads as failed.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { ExportOptions, ExportResult } from "@svc/engine";
import type { ExportInfo, ExportProgress } from "@svc/wire";
import type { DataDir } from "../data-dir.js";
import { ApiError } from "../http/api-error.js";
import { nowIso, UUID_PATTERN, uuidv7 } from "../ids.js";
import { exportTransformersPeftAdapter } from "../models/transformers-fallback.js";

const MANIFEST = "manifest.json";
/** Exports one process holds at once, running or queued (each one waits its turn and its disk). */
export const MAX_PENDING_EXPORTS = 8;
/** A running export no process here knows of, this old, died with its process. */
const STALE_RUNNING_MS = 24 * 3600_000;

export interface ExportRequest {
  projectId: string;
  format: ExportInfo["format"];
  quant: string | null;
  jobId: string | null;
  step: number | null;
  baseModel: string;
  modelDir: string;
  adapterDir: string | null;
  /** The base model's architecture is one the engine does not implement: only its adapter is exported (peft). */
  transformersOnly?: boolean;
}

type WorkerMessage =
  | { progress: ExportProgress }
  | { result: ExportResult }
  | { error: { message: string; code: string } };

class ExportFailure extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

function runOnWorker(
  options: Omit<ExportOptions, "onProgress">,
  onProgress: (p: ExportProgress) => void,
): Promise<ExportResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./export-worker.js", import.meta.url), { workerData: options });
    worker.on("message", (message: WorkerMessage) => {
      if ("progress" in message) onProgress(message.progress);
      else if ("result" in message) resolve(message.result);
      else reject(new ExportFailure(message.error.message, message.error.code));
    });
    worker.once("error", reject);
    worker.once("exit", (code) =>
      reject(new ExportFailure(`the export thread exited with code ${code}`, "export_failed")),
    );
  });
}

export class ExportRunner {
  private queue: Promise<unknown> = Promise.resolve();
  /** Progress of the exports this process runs or has queued, by id. */
  private readonly live = new Map<string, ExportProgress>();

  constructor(private readonly dataDir: DataDir) {}

  private dirOf(id: string): string {
    return this.dataDir.abs(join("exports", id));
  }

  private read(id: string): ExportInfo | null {
    const manifest = join(this.dirOf(id), MANIFEST);
    if (!existsSync(manifest)) return null;
    try {
      return JSON.parse(readFileSync(manifest, "utf8")) as ExportInfo;
    } catch {
      return null;
    }
  }

  private write(info: ExportInfo): void {
    this.dataDir.writeAtomic(
      this.dataDir.rel(join(this.dirOf(info.id), MANIFEST)),
      `${JSON.stringify(info, null, 2)}\n`,
    );
  }

  private fail(info: ExportInfo, message: string, code: string): void {
    const dir = this.dirOf(info.id);
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (name !== MANIFEST) rmSync(join(dir, name), { recursive: true, force: true });
    }
    this.write({ ...info, status: "failed", progress: null, error: { message, code }, files: [] });
  }

  /** Records the export as running and queues it after the ones before it; returns its record. */
  start(request: ExportRequest): ExportInfo {
    if (this.live.size >= MAX_PENDING_EXPORTS) {
      throw new ApiError(
        429,
        "too_many_exports",
        `${this.live.size} exports are already running or queued on this server; try again when one has finished`,
      );
    }
    const info: ExportInfo = {
      id: uuidv7(),
      status: "running",
      progress: { stage: "queued", done: 0, total: 1 },
      error: null,
      projectId: request.projectId,
      format: request.format,
      quant: request.quant,
      jobId: request.jobId,
      step: request.step,
      baseModel: request.baseModel,
      files: [],
      warnings: [],
      createdAt: nowIso(),
    };
    mkdirSync(this.dirOf(info.id), { recursive: true });
    this.write(info);
    this.live.set(info.id, info.progress as ExportProgress);
    this.queue = this.queue.then(() => this.run(info, request)).catch(() => undefined);
    return info;
  }

  private async run(info: ExportInfo, request: ExportRequest): Promise<void> {
    const dir = this.dirOf(info.id);
    try {
      const result =
        request.transformersOnly && request.adapterDir && request.format === "peft"
          ? exportTransformersPeftAdapter(request.adapterDir, dir)
          : await runOnWorker(
              {
                baseDir: request.modelDir,
                adapterDir: request.adapterDir,
                format: request.format,
                quant: request.quant ?? undefined,
                out: dir,
                name: request.jobId ? `${request.baseModel} (job ${request.jobId})` : request.baseModel,
              },
              (progress) => this.live.set(info.id, progress),
            );
      if (!existsSync(join(dir, MANIFEST))) {
        rmSync(dir, { recursive: true, force: true }); // deleted while it ran
        return;
      }
      this.write({
        ...info,
        status: "ready",
        progress: null,
        quant: result.quant,
        files: result.files.map((path) => ({ path, bytes: statSync(join(dir, path)).size })),
        warnings: result.warnings,
      });
    } catch (error) {
      const e = error as Error & { code?: string };
      if (existsSync(join(dir, MANIFEST))) this.fail(info, e.message, e.code ?? "export_failed");
    } finally {
      this.live.delete(info.id);
    }
  }

  /** An export by id (with its live progress while running here), or null. */
  get(id: string): ExportInfo | null {
    if (!UUID_PATTERN.test(id)) return null;
    const info = this.read(id);
    if (info?.status !== "running") return info;
    const progress = this.live.get(id);
    // running in no process that answers (this one would know it): lost if it has not finished in a day
    if (!progress && Date.now() - Date.parse(info.createdAt) > STALE_RUNNING_MS) {
      return {
        ...info,
        status: "failed",
        error: { message: "the server stopped while this export ran", code: "export_interrupted" },
      };
    }
    return { ...info, progress: progress ?? null };
  }

  /** Whether the export is running or queued in this process (a deleted one too, until its thread ends). */
  isPending(id: string): boolean {
    return this.live.has(id);
  }

  /** The absolute path of one of a ready export's files. */
  filePath(info: ExportInfo, file: string): string | null {
    return info.status === "ready" && info.files.some((f) => f.path === file)
      ? join(this.dirOf(info.id), file)
      : null;
  }

  remove(id: string): void {
    rmSync(this.dirOf(id), { recursive: true, force: true });
  }
}
