// The Hugging Face cache as huggingface_hub and transformers lay it out
// (huggingface_hub's file_download.py and its cache-system guide), so that
// svc and Python tools read and write one copy:
//
//   <cache>/models--<org>--<name>/
//     blobs/<etag>                  the file's bytes, named by its ETag (git sha1, or sha256 for LFS files)
//     blobs/<etag>.incomplete       a download in progress (resumed with a Range request)
//     snapshots/<sha>/<path>        relative symlink to ../../blobs/<etag>
//     refs/<revision>               the commit sha the branch or tag pointed at (no newline)
//   <cache>/datasets--<org>--<name>/  the same for datasets
//   <cache>/.locks/<repo folder>/     lock files of downloads in progress

import { randomBytes } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import type { RepoKind } from "./hub-error.js";
import { COMMIT_SHA } from "./repo-name.js";

export function repoFolderName(kind: RepoKind, repo: string): string {
  return `${kind}s--${repo.split("/").join("--")}`;
}

export class RepoCache {
  readonly root: string;

  constructor(
    readonly cacheDir: string,
    readonly kind: RepoKind,
    readonly repo: string,
  ) {
    this.root = join(cacheDir, repoFolderName(kind, repo));
  }

  blobPath(etag: string): string {
    return join(this.root, "blobs", etag);
  }

  snapshotDir(sha: string): string {
    return join(this.root, "snapshots", sha);
  }

  lockDir(): string {
    return join(this.cacheDir, ".locks", repoFolderName(this.kind, this.repo));
  }

  /** The commit sha `revision` names here: itself when it is a sha, else refs/<revision>'s content. */
  resolveRef(revision: string): string | null {
    if (COMMIT_SHA.test(revision)) return revision;
    try {
      const sha = readFileSync(join(this.root, "refs", revision), "utf8").trim();
      return COMMIT_SHA.test(sha) ? sha : null;
    } catch {
      return null;
    }
  }

  async writeRef(revision: string, sha: string): Promise<void> {
    if (revision === sha) return;
    const path = join(this.root, "refs", revision);
    mkdirSync(dirname(path), { recursive: true });
    await writeFile(path, sha);
  }

  /**
   * snapshots/<sha>/<path> → the blob, as a relative symlink (huggingface_hub's
   * _create_symlink). Processes sharing the cache may link the same file at
   * once: a link already right is kept, any other is replaced by a rename of
   * a new link made beside the locks, so no reader sees the path missing and
   * no writer fails on the other's link.
   */
  linkSnapshotFile(sha: string, path: string, etag: string): void {
    const link = join(this.snapshotDir(sha), ...path.split("/"));
    mkdirSync(dirname(link), { recursive: true });
    const target = relative(dirname(link), this.blobPath(etag)).split(sep).join("/");
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink() && readlinkSync(link) === target) return;
    mkdirSync(this.lockDir(), { recursive: true });
    const fresh = join(this.lockDir(), `link-${process.pid}-${randomBytes(6).toString("hex")}`);
    symlinkSync(target, fresh); // the target is relative to the link's final folder
    try {
      renameSync(fresh, link);
    } catch (error) {
      rmSync(fresh, { force: true });
      throw error;
    }
  }

  /** The snapshot's files (paths with "/"), following symlinks; links to missing blobs are left out. */
  snapshotFiles(sha: string): { path: string; bytes: number }[] {
    const dir = this.snapshotDir(sha);
    const files: { path: string; bytes: number }[] = [];
    const walk = (sub: string) => {
      for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
        const path = sub ? `${sub}/${entry.name}` : entry.name;
        const stats = statSync(join(dir, path), { throwIfNoEntry: false });
        if (stats?.isDirectory()) walk(path);
        else if (stats?.isFile()) files.push({ path, bytes: stats.size });
      }
    };
    if (existsSync(dir)) walk("");
    return files;
  }

  /** The cached snapshots: each commit sha with the refs pointing at it. */
  snapshots(): { sha: string; refs: string[] }[] {
    const dir = join(this.root, "snapshots");
    if (!existsSync(dir)) return [];
    const refs = this.refs();
    return readdirSync(dir)
      .filter((sha) => COMMIT_SHA.test(sha))
      .map((sha) => ({ sha, refs: [...refs].filter(([, s]) => s === sha).map(([r]) => r) }));
  }

  /** refs/<name> → sha, nested names ("refs/pr/1") included. */
  refs(): Map<string, string> {
    const out = new Map<string, string>();
    const walk = (sub: string) => {
      const dir = join(this.root, "refs", sub);
      if (!existsSync(dir)) return;
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const name = sub ? `${sub}/${entry.name}` : entry.name;
        if (entry.isDirectory()) walk(name);
        else {
          const sha = this.resolveRef(name);
          if (sha) out.set(name, sha);
        }
      }
    };
    walk("");
    return out;
  }

  /** Bytes of the repo's blobs (what removing it frees; snapshots share blobs). */
  blobBytes(): number {
    const dir = join(this.root, "blobs");
    if (!existsSync(dir)) return 0;
    let bytes = 0;
    for (const name of readdirSync(dir))
      bytes += statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
    return bytes;
  }

  exists(): boolean {
    return existsSync(this.root);
  }

  /**
   * Removes one snapshot, the refs that point at it, and the blobs no other
   * snapshot links to (huggingface_hub's delete_revisions does the same).
   */
  removeSnapshot(sha: string): void {
    for (const [ref, target] of this.refs())
      if (target === sha) rmSync(join(this.root, "refs", ref), { force: true });
    rmSync(this.snapshotDir(sha), { recursive: true, force: true });
    const linked = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.isSymbolicLink()) linked.add(basename(readlinkSync(path)));
      }
    };
    const snapshots = join(this.root, "snapshots");
    if (existsSync(snapshots)) walk(snapshots);
    const blobs = join(this.root, "blobs");
    if (!existsSync(blobs)) return;
    for (const blob of readdirSync(blobs)) if (!linked.has(blob)) rmSync(join(blobs, blob), { force: true });
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
    rmSync(this.lockDir(), { recursive: true, force: true });
  }
}

/** The repos of one kind in the cache, as `org/name` (folders `<kind>s--org--name`). */
export function cachedRepos(cacheDir: string, kind: RepoKind): string[] {
  if (!existsSync(cacheDir)) return [];
  const prefix = `${kind}s--`;
  return readdirSync(cacheDir)
    .filter((name) => name.startsWith(prefix) && name.slice(prefix.length).includes("--"))
    .map((name) => {
      const parts = name.slice(prefix.length).split("--");
      return `${parts[0]}/${parts.slice(1).join("--")}`;
    });
}
