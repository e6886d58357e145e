// The server's files: the SQLite database, uploaded datasets and job outputs
// (adapters and checkpoints), all under one folder. Files are written to a
// temporary name and renamed into place so a crash never leaves half a file.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { randomBase62 } from "./ids.js";

export const DEFAULT_DATA_DIR = join(homedir(), ".svc", "server");

export class DataDir {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
    mkdirSync(join(this.root, "datasets"), { recursive: true });
    mkdirSync(join(this.root, "jobs"), { recursive: true });
  }

  get sqlitePath(): string {
    return join(this.root, "svc.db");
  }

  datasetPath(datasetId: string): string {
    return join("datasets", `${datasetId}.jsonl`);
  }

  /** Where a job's trainer writes checkpoint-<step>/ and final/. */
  jobOutputPath(jobId: string): string {
    return join("jobs", jobId);
  }

  /** Absolute path of a stored relative path. */
  abs(relativePath: string): string {
    return isAbsolute(relativePath) ? relativePath : join(this.root, relativePath);
  }

  /** Relative path of an absolute path inside the data dir. */
  rel(absolutePath: string): string {
    return relative(this.root, absolutePath);
  }

  writeAtomic(relativePath: string, data: Buffer | string): void {
    const target = this.abs(relativePath);
    mkdirSync(dirname(target), { recursive: true });
    const tmp = `${target}.tmp-${randomBase62(8)}`;
    try {
      writeFileSync(tmp, data);
      renameSync(tmp, target);
    } catch (error) {
      // A full disk must not leave a partial temporary file behind.
      rmSync(tmp, { force: true });
      throw error;
    }
  }

  /** writeAtomic without holding the event loop while a large file (an upload) is written. */
  async writeAtomicAsync(relativePath: string, data: Buffer | string): Promise<void> {
    const target = this.abs(relativePath);
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.tmp-${randomBase62(8)}`;
    try {
      await writeFile(tmp, data);
      await rename(tmp, target);
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
  }

  remove(relativePath: string): void {
    rmSync(this.abs(relativePath), { force: true });
  }

  /**
   * Deletes files in datasets/ that no dataset row references (`referenced`:
   * the rows' paths): what a crash between writing a file and committing its
   * row leaves behind. Files younger than `graceMs` stay, since they may be an
   * upload another process is committing right now. Job outputs (jobs/) are
   * left alone. `database` names the database the rows come from: the first
   * sweep records it, and a data dir recorded for another database is not
   * swept (its files are that database's). Returns the removed paths, or null
   * when the sweep was skipped.
   */
  sweepDatasets(referenced: Iterable<string>, database: string, graceMs: number): string[] | null {
    const marker = join(this.root, "datasets", OWNER_FILE);
    if (existsSync(marker) && readFileSync(marker, "utf8").trim() !== database) return null;
    writeFileSync(marker, `${database}\n`);
    const keep = new Set([...referenced].map((path) => this.rel(this.abs(path))));
    const cutoff = Date.now() - graceMs;
    const removed: string[] = [];
    for (const entry of readdirSync(join(this.root, "datasets"), { withFileTypes: true })) {
      const path = join("datasets", entry.name);
      if (!entry.isFile() || entry.name === OWNER_FILE || keep.has(path)) continue;
      try {
        if (statSync(this.abs(path)).mtimeMs > cutoff) continue;
        rmSync(this.abs(path), { force: true });
        removed.push(path);
      } catch {
        // Gone already (another process swept it): nothing to do.
      }
    }
    return removed;
  }
}

/** Names the database whose rows the files in datasets/ belong to. */
const OWNER_FILE = ".database";

/** Files in datasets/ without a row are swept once they are this old. */
export const ORPHAN_GRACE_MS = 60 * 60 * 1000;
