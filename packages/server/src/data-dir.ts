// The server's files: the SQLite database, uploaded datasets and job outputs
// (adapters and checkpoints), all under one folder. Files are written to a
// temporary name and renamed into place so a crash never leaves half a file.
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
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
    writeFileSync(tmp, data);
    renameSync(tmp, target);
  }
}
