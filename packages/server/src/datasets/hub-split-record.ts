// Which files svc read for a Hub dataset split at a commit, kept in the
// server's data dir (hub-datasets/<repo folder>/<sha>.json). The Hugging Face
// cache is filled a file at a time, so a snapshot folder can hold part of a
// split whose download was cut short; a split is read from the cache without
// asking the Hub only when this record says its cached files are the whole
// split (or when HF_HUB_OFFLINE=1 leaves nothing else to read).
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { repoFolderName } from "../hub/index.js";

type Record = { [split: string]: string[] };

export class HubSplitRecords {
  constructor(private readonly dir: string) {}

  private path(repo: string, sha: string): string {
    return join(this.dir, repoFolderName("dataset", repo), `${sha}.json`);
  }

  private async read(repo: string, sha: string): Promise<Record> {
    try {
      return JSON.parse(await readFile(this.path(repo, sha), "utf8")) as Record;
    } catch {
      return {};
    }
  }

  /** Whether `files` are the whole of `split` (config and split, as the request named them) at `sha`. */
  async whole(repo: string, sha: string, split: string, files: readonly string[]): Promise<boolean> {
    const known = (await this.read(repo, sha))[split];
    return known !== undefined && known.length === files.length && known.every((f) => files.includes(f));
  }

  async remember(repo: string, sha: string, split: string, files: readonly string[]): Promise<void> {
    const record = await this.read(repo, sha);
    record[split] = [...files];
    const path = this.path(repo, sha);
    await mkdir(join(path, ".."), { recursive: true });
    // Another server process may write the same record: each write is whole (a rename), the last one stays.
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(record));
    await rename(temporary, path);
  }
}

/** The record's key for a request: its config (or none) and split. */
export const splitKey = (request: { config?: string; split: string }) =>
  `${request.config ?? ""}/${request.split}`;
