// A Hub dataset split as training rows: its files are chosen from the
// repository's listing (hub-dataset-layout.ts), fetched into the shared Hugging
// Face cache (ensureSnapshot; `datasets--org--name`), and converted and checked
// on a worker thread (hub-dataset-convert.ts). A split whose files are all in
// the cache is read without asking the Hub anything.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { listFiles } from "@huggingface/hub";
import type { HubDatasetRequest, HubDatasetSource } from "@svc/wire";
import { ApiError, badRequest } from "../http/api-error.js";
import { hubErrorOf } from "../hub/hub-error.js";
import {
  ensureSnapshot,
  HubError,
  type HubProgress,
  hubCacheDir,
  hubEndpoint,
  hubOffline,
  hubToken,
  parseHubName,
  RepoCache,
} from "../hub/index.js";
import { hubApiError } from "../models/job-base-model.js";
import { convertHubSplitOffLoop } from "./hub-dataset-convert.js";
import { isDataFile, type SplitSelection, selectSplitFiles } from "./hub-dataset-layout.js";
import { type ReadmeConfig, ReadmeConfigError, readmeConfigs } from "./hub-dataset-readme.js";
import { type HubSplitRecords, splitKey } from "./hub-split-record.js";

const README = "README.md";
/** A split's files may be this many times the dataset size limit (Parquet holds columns no row is made from). */
const DOWNLOAD_FACTOR = 4;

/** The configs a snapshot's README.md declares (null: none, or no README). */
async function readmeOf(dir: string, label: string): Promise<ReadmeConfig[] | null> {
  const text = await readFile(join(dir, README), "utf8").catch(() => null);
  if (text === null) return null;
  try {
    return readmeConfigs(text);
  } catch (error) {
    if (!(error instanceof ReadmeConfigError)) throw error;
    throw badRequest(`${label}: ${error.message}`, "hub_dataset_readme");
  }
}

/** push_to_hub's shard names say how many shards a split has: `train-00001-of-00004.parquet`. */
const SHARD = /-(\d+)-of-(\d+)\.[^/]+$/;

/** Whether every shard the names promise is there (a download cut short may have left some out). */
function shardsComplete(files: readonly string[]): boolean {
  const groups = new Map<string, { expected: number; seen: Set<number> }>();
  for (const file of files) {
    const match = SHARD.exec(file);
    if (!match) continue;
    const key = file.slice(0, match.index);
    const group = groups.get(key) ?? { expected: Number(match[2]), seen: new Set<number>() };
    group.seen.add(Number(match[1]));
    groups.set(key, group);
  }
  return [...groups.values()].every((g) => g.seen.size === g.expected);
}

export interface LoadedHubDataset {
  jsonl: Buffer;
  rows: number;
  source: HubDatasetSource;
}

/** The split's file paths, from the cached snapshot when it holds the whole split, else from the Hub's listing. */
async function chooseFiles(
  request: HubDatasetRequest,
  label: string,
  maxDownloadBytes: number,
  records: HubSplitRecords,
): Promise<SplitSelection & { cachedOnly: boolean; hasReadme: boolean }> {
  const revision = request.revision ?? "main";
  const cache = new RepoCache(hubCacheDir(), "dataset", request.name);
  const sha = cache.resolveRef(revision);
  const cached = sha ? cache.snapshotFiles(sha).map((f) => f.path) : [];
  let fromCache: SplitSelection | null = null;
  let cacheProblem: unknown = null;
  const cachedReadme = cached.includes(README);
  if (cached.length > 0) {
    try {
      const readme = cachedReadme && sha ? await readmeOf(cache.snapshotDir(sha), label) : null;
      fromCache = selectSplitFiles(cached, { ...request, label }, readme);
    } catch (error) {
      cacheProblem = error;
    }
  }
  const whole =
    fromCache !== null &&
    shardsComplete(fromCache.files) &&
    (hubOffline() || (await records.whole(request.name, sha!, splitKey(request), fromCache.files)));
  if (fromCache && whole) return { ...fromCache, cachedOnly: true, hasReadme: cachedReadme };
  if (hubOffline()) {
    // What the cache holds is not the whole repository: a split missing there may well be on the Hub.
    if (cacheProblem instanceof ApiError)
      throw new HubError(
        `dataset ${request.name}: the split is not in the Hugging Face cache (${cache.root}), and HF_HUB_OFFLINE=1 forbids asking the Hub; in the cache: ${cacheProblem.message}`,
        "hub_offline",
      );
    if (cacheProblem) throw cacheProblem;
    // ensureSnapshot explains HF_HUB_OFFLINE and where the cache is.
    await ensureSnapshot({
      repo: request.name,
      kind: "dataset",
      revision,
      wanted: isDataFile,
      complete: () => false,
    });
  }
  const endpoint = hubEndpoint();
  const accessToken = hubToken();
  const paths: string[] = [];
  const sizes = new Map<string, number>();
  try {
    for await (const entry of listFiles({
      repo: { type: "dataset", name: request.name },
      revision,
      recursive: true,
      hubUrl: endpoint,
      accessToken,
    })) {
      if (entry.type !== "file") continue;
      paths.push(entry.path);
      sizes.set(entry.path, entry.lfs?.size ?? entry.size);
    }
  } catch (error) {
    throw hubErrorOf(error, {
      kind: "dataset",
      repo: request.name,
      revision,
      endpoint,
      hasToken: !!accessToken,
    });
  }
  const hasReadme = paths.includes(README);
  let readme: ReadmeConfig[] | null = null;
  if (hasReadme) {
    const snapshot = await ensureSnapshot({
      repo: request.name,
      kind: "dataset",
      revision,
      wanted: (path) => path === README,
    });
    readme = await readmeOf(snapshot.dir, label);
  }
  const selection = selectSplitFiles(paths, { ...request, label }, readme);
  // Nothing is fetched that could not become a dataset here (unread columns, images say, make files larger than their rows).
  const bytes = selection.files.reduce((sum, file) => sum + (sizes.get(file) ?? 0), 0);
  if (bytes > maxDownloadBytes)
    throw new ApiError(
      413,
      "payload_too_large",
      `${label}: the split's files are ${bytes} bytes, over the ${maxDownloadBytes} this server fetches for a dataset (${DOWNLOAD_FACTOR} × --max-dataset-bytes)`,
    );
  return { ...selection, cachedOnly: false, hasReadme };
}

/**
 * Loads `request`'s split as checked JSONL rows, or throws an ApiError: 400
 * naming the split, columns or row that is wrong, 413 over `limit`, or the
 * Hub's failure as for base models (400 with its code; 502 when the Hub cannot be reached).
 */
export async function loadHubDataset(
  request: HubDatasetRequest,
  options: {
    limit: number;
    /** Where the splits svc read are recorded (hub-split-record.ts). */
    records: HubSplitRecords;
    onProgress?: (files: HubProgress[]) => void;
    signal?: AbortSignal;
  },
): Promise<LoadedHubDataset> {
  const ref = parseHubName(request.name);
  if (ref?.revision !== "main")
    throw badRequest(`"huggingface.name": "${request.name}" is not a Hub dataset id (org/name)`);
  if (request.revision !== undefined && !parseHubName(`${request.name}@${request.revision}`))
    throw badRequest(`"huggingface.revision": "${request.revision}" is not a branch, tag or commit sha`);
  const label = `${request.name}${request.config ? ` config "${request.config}"` : ""} split "${request.split}"`;
  try {
    const selection = await chooseFiles(
      request,
      request.name,
      options.limit * DOWNLOAD_FACTOR,
      options.records,
    );
    // README.md comes along: it decides the layout the next time the split is read from the cache.
    const wanted = new Set(selection.hasReadme ? [...selection.files, README] : selection.files);
    const snapshot = await ensureSnapshot({
      repo: request.name,
      kind: "dataset",
      revision: request.revision,
      wanted: (path) => wanted.has(path),
      complete: (_dir, files) => files.length === wanted.size,
      onProgress: options.onProgress,
      signal: options.signal,
    });
    const result = await convertHubSplitOffLoop({
      dir: snapshot.dir,
      files: selection.files,
      columns: request.columns,
      label,
      limit: options.limit,
    });
    if (!result.ok) throw new ApiError(result.status, result.code, result.message);
    if (!selection.cachedOnly)
      await options.records.remember(request.name, snapshot.revision, splitKey(request), selection.files);
    const { kind, ...columns } = result.shape;
    return {
      jsonl: Buffer.from(result.jsonl.buffer, result.jsonl.byteOffset, result.jsonl.byteLength),
      rows: result.rows,
      source: {
        type: "huggingface",
        name: request.name,
        split: request.split,
        config: selection.config,
        revision: snapshot.revision,
        files: selection.files,
        shape: kind,
        columns: Object.fromEntries(Object.entries(columns).filter(([, v]) => v !== undefined)),
        ignoredColumns: result.ignoredColumns,
        fromCache: selection.cachedOnly || snapshot.fromCache,
      },
    };
  } catch (error) {
    throw error instanceof HubError ? hubApiError(error, "huggingface.name") : error;
  }
}
