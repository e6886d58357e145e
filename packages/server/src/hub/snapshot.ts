// ensureSnapshot: a Hub repo at a revision as a folder of files on disk, from
// the Hugging Face cache when it is there, else downloaded into it.
// @huggingface/hub answers what the revision's commit is (modelInfo /
// datasetInfo) and which files it has with their sizes and hashes (listFiles);
// the bytes come through blob-download.ts, which resumes and reports progress.
// Concurrent callers for the same repo and revision in this process share one
// download; other processes are kept apart by a lock per blob.
import { mkdirSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { datasetInfo, listFiles, modelInfo } from "@huggingface/hub";
import { type BlobSource, downloadBlob, HttpStatusError } from "./blob-download.js";
import { RepoCache } from "./cache-layout.js";
import { acquireFileLock } from "./file-lock.js";
import { HubError, hubErrorOf, type RepoKind, repoLabel } from "./hub-error.js";
import { hubCacheDir, hubEndpoint, hubOffline, hubToken } from "./hub-settings.js";

export interface HubProgress {
  file: string;
  bytesDone: number;
  bytesTotal: number;
}

export interface HubSnapshot {
  repo: string;
  kind: RepoKind;
  /** The commit sha. */
  revision: string;
  /** snapshots/<sha> */
  dir: string;
  /** Bytes of the wanted files. */
  bytes: number;
  fromCache: boolean;
}

export interface EnsureSnapshotOptions {
  repo: string;
  kind: RepoKind;
  /** Branch, tag or commit sha; "main" when left out. */
  revision?: string;
  /** Which of the repo's files (paths with "/") to have on disk. */
  wanted: (path: string) => boolean;
  /**
   * Whether a cached snapshot folder already holds everything the caller needs
   * (default: at least one wanted file). A cached snapshot that passes is used
   * without asking the Hub anything.
   */
  complete?: (dir: string, files: string[]) => boolean;
  /** Ask the Hub what the revision points at now even when a snapshot is cached (svc models pull). */
  refresh?: boolean;
  /** Called with every wanted file's progress and the commit being fetched, at most every PROGRESS_MS and once at the end. */
  onProgress?: (files: HubProgress[], revision: string) => void;
  signal?: AbortSignal;
}

const PROGRESS_MS = 100;
/** Attempts at one file while each attempt gets further than the last (each resumes where the last stopped). */
const MAX_ATTEMPTS = 5;

const shared = new Map<string, SharedDownload>();

/** One download and the callers waiting on it; it stops when every caller has gone. */
interface SharedDownload {
  result: Promise<HubSnapshot>;
  listeners: Set<(files: HubProgress[], revision: string) => void>;
  controller: AbortController;
  callers: number;
}

export async function ensureSnapshot(options: EnsureSnapshotOptions): Promise<HubSnapshot> {
  const revision = options.revision ?? "main";
  if (options.signal?.aborted) throw cancelled(options.kind, options.repo, revision);
  const cache = new RepoCache(hubCacheDir(), options.kind, options.repo);
  // Offline, a refresh cannot ask the Hub: the cache is all there is.
  if (!options.refresh || hubOffline()) {
    const cached = cachedSnapshot(cache, revision, options);
    if (cached) return cached;
  }
  if (hubOffline())
    throw new HubError(
      `${repoLabel(options.kind, options.repo, revision)} is not in the Hugging Face cache (${cache.root}) and HF_HUB_OFFLINE=1 forbids downloading it: unset HF_HUB_OFFLINE, or fetch it where the Hub can be reached (svc models pull) and copy the cache`,
      "hub_offline",
    );
  const key = `${options.kind}:${options.repo}@${revision}:${cache.cacheDir}`;
  const running = shared.get(key);
  const download = running ?? startDownload(key, cache, revision, options);
  const snapshot = await joinDownload(download, options, () => forget(key, download));
  if (!running) return snapshot;
  // Joined another caller's download, which fetched the files *it* wanted: this caller may want more.
  const mine = cachedSnapshot(cache, snapshot.revision, options);
  if (mine) return { ...mine, fromCache: snapshot.fromCache };
  return ensureSnapshot({ ...options, revision: snapshot.revision });
}

function forget(key: string, download: SharedDownload): void {
  if (shared.get(key) === download) shared.delete(key);
}

function startDownload(
  key: string,
  cache: RepoCache,
  revision: string,
  options: EnsureSnapshotOptions,
): SharedDownload {
  const listeners = new Set<(files: HubProgress[], revision: string) => void>();
  const controller = new AbortController();
  const report = (files: HubProgress[], revision: string) => {
    for (const listener of listeners) listener(files, revision);
  };
  const download: SharedDownload = {
    result: fetchSnapshot(cache, revision, options, controller.signal, report).finally(() =>
      forget(key, download),
    ),
    listeners,
    controller,
    callers: 0,
  };
  // Callers that all let go leave nobody to hear the outcome; it is not an unhandled rejection.
  download.result.catch(() => {});
  shared.set(key, download);
  return download;
}

/** Waits on a shared download as one of its callers; this caller's signal only lets go of it. */
function joinDownload(
  download: SharedDownload,
  options: EnsureSnapshotOptions,
  forget: () => void,
): Promise<HubSnapshot> {
  const { signal, onProgress } = options;
  download.callers++;
  if (onProgress) download.listeners.add(onProgress);
  return new Promise<HubSnapshot>((resolve, reject) => {
    const leave = () => {
      signal?.removeEventListener("abort", onAbort);
      if (onProgress) download.listeners.delete(onProgress);
      download.callers--;
    };
    const onAbort = () => {
      leave();
      if (download.callers === 0) {
        // The next caller starts afresh (it waits for the blob lock while this one winds down).
        forget();
        download.controller.abort();
      }
      reject(cancelled(options.kind, options.repo, options.revision));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    download.result.then(
      (snapshot) => {
        leave();
        resolve(snapshot);
      },
      (error) => {
        leave();
        reject(error);
      },
    );
  });
}

function cachedSnapshot(
  cache: RepoCache,
  revision: string,
  options: EnsureSnapshotOptions,
): HubSnapshot | null {
  const sha = cache.resolveRef(revision);
  if (!sha) return null;
  const files = cache.snapshotFiles(sha).filter((f) => options.wanted(f.path));
  const dir = cache.snapshotDir(sha);
  const complete = options.complete ?? ((_dir: string, paths: string[]) => paths.length > 0);
  if (
    !complete(
      dir,
      files.map((f) => f.path),
    )
  )
    return null;
  return {
    repo: options.repo,
    kind: options.kind,
    revision: sha,
    dir,
    bytes: files.reduce((sum, f) => sum + f.bytes, 0),
    fromCache: true,
  };
}

async function fetchSnapshot(
  cache: RepoCache,
  revision: string,
  options: EnsureSnapshotOptions,
  signal: AbortSignal,
  report: (files: HubProgress[], revision: string) => void,
): Promise<HubSnapshot> {
  const endpoint = hubEndpoint();
  const accessToken = hubToken();
  const context = {
    kind: options.kind,
    repo: options.repo,
    revision,
    endpoint,
    hasToken: accessToken !== undefined,
  };
  const credentials = {
    hubUrl: endpoint,
    accessToken,
    fetch: ((url, init) => fetch(url, { ...init, signal })) as typeof fetch,
  };
  try {
    const info =
      options.kind === "model"
        ? await modelInfo({ name: options.repo, revision, additionalFields: ["sha"], ...credentials })
        : await datasetInfo({ name: options.repo, revision, additionalFields: ["sha"], ...credentials });
    const sha = (info as { sha?: string }).sha;
    if (!sha)
      throw new HubError(
        `${repoLabel(options.kind, options.repo, revision)}: the Hub at ${endpoint} answered without a commit sha`,
        "hub_unreachable",
      );
    const sources: (BlobSource & { path: string })[] = [];
    const repoDesignation = { type: options.kind, name: options.repo } as const;
    for await (const entry of listFiles({
      repo: repoDesignation,
      revision: sha,
      recursive: true,
      ...credentials,
    })) {
      if (entry.type !== "file" || !options.wanted(entry.path)) continue;
      const lfs = entry.lfs;
      const etag = lfs?.oid ?? entry.oid;
      if (!etag)
        throw new HubError(`${options.repo}: the Hub listed ${entry.path} without a hash`, "hub_unreachable");
      sources.push({
        path: entry.path,
        size: lfs?.size ?? entry.size,
        etag,
        hash: lfs ? { algorithm: "sha256", hex: lfs.oid } : { algorithm: "git-sha1", hex: etag },
        url: `${endpoint}/${options.kind === "dataset" ? "datasets/" : ""}${options.repo}/resolve/${sha}/${entry.path.split("/").map(encodeURIComponent).join("/")}`,
      });
    }
    if (sources.length === 0)
      throw new HubError(
        `${repoLabel(options.kind, options.repo, revision)} has none of the files svc reads (at commit ${sha})`,
        "hub_not_found",
      );

    const progress: HubProgress[] = sources.map((s) => ({ file: s.path, bytesDone: 0, bytesTotal: s.size }));
    let lastReport = 0;
    const tick = (force: boolean) => {
      const now = Date.now();
      if (!force && now - lastReport < PROGRESS_MS) return;
      lastReport = now;
      report(
        progress.map((p) => ({ ...p })),
        sha,
      );
    };
    const headers: Record<string, string> = accessToken ? { Authorization: `Bearer ${accessToken}` } : {};
    let fetched = 0;
    for (const [i, source] of sources.entries()) {
      const blob = cache.blobPath(source.etag);
      const onBytes = (done: number) => {
        progress[i]!.bytesDone = done;
        tick(false);
      };
      if (!(await sameSize(blob, source.size))) {
        mkdirSync(join(cache.root, "blobs"), { recursive: true });
        mkdirSync(cache.lockDir(), { recursive: true });
        const release = await acquireFileLock(join(cache.lockDir(), `${source.etag}.svc.lock`), signal);
        try {
          // Another process may have finished it while this one waited for the lock.
          if (!(await sameSize(blob, source.size))) {
            await downloadWithRetries(source, blob, headers, onBytes, signal);
            fetched++;
          }
        } finally {
          await release();
        }
      }
      progress[i]!.bytesDone = source.size;
      cache.linkSnapshotFile(sha, source.path, source.etag);
    }
    await cache.writeRef(revision, sha);
    tick(true);
    return {
      repo: options.repo,
      kind: options.kind,
      revision: sha,
      dir: cache.snapshotDir(sha),
      bytes: sources.reduce((sum, s) => sum + s.size, 0),
      fromCache: fetched === 0,
    };
  } catch (error) {
    if (signal.aborted) throw cancelled(options.kind, options.repo, revision);
    throw hubErrorOf(error, context);
  }
}

function cancelled(kind: RepoKind, repo: string, revision?: string): HubError {
  return new HubError(`${repoLabel(kind, repo, revision)}: the download was cancelled`, "hub_cancelled");
}

async function sameSize(path: string, size: number): Promise<boolean> {
  return (await stat(path).catch(() => null))?.size === size;
}

/** Retries a broken connection from where it stopped, while each attempt makes progress. */
async function downloadWithRetries(
  source: BlobSource,
  blob: string,
  headers: Record<string, string>,
  onBytes: (done: number) => void,
  signal: AbortSignal,
): Promise<void> {
  let best = -1;
  let reached = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      await downloadBlob(
        source,
        blob,
        headers,
        (done) => {
          reached = done;
          onBytes(done);
        },
        signal,
      );
      return;
    } catch (error) {
      // A refusal (401, 404) or a bad hash does not get better by asking again.
      const broken = !(error instanceof HttpStatusError) && !/hash to/.test((error as Error).message);
      if (signal.aborted || !broken || attempt >= MAX_ATTEMPTS || reached <= best) throw error;
      best = reached;
    }
  }
}
