// Hub models in the registry: what the Hugging Face cache holds (listed and
// served without asking the Hub), what the operator's policy lets jobs fetch,
// and the fetching itself (docs/hub.md).
import { type ModelConfig, readModelConfig } from "@svc/engine";
import type { BaseModelInfo } from "@svc/wire";
import {
  cachedRepos,
  type EnsureSnapshotOptions,
  ensureSnapshot,
  type HubSnapshot,
  hubCacheDir,
  isConfigFile,
  isModelFile,
  modelSnapshotComplete,
  parseHubName,
  RepoCache,
} from "../hub/index.js";
import type { HubModelPolicy } from "./hub-policy.js";

export interface HubModelEntry {
  dir: string;
  /** The commit sha. */
  revision: string;
  bytes: number;
}

export class HubModels {
  constructor(readonly policy: HubModelPolicy) {}

  /** `name`'s complete snapshot in the cache (no request to the Hub), or null. */
  cached(name: string): HubModelEntry | null {
    const ref = parseHubName(name);
    if (!ref) return null;
    const cache = new RepoCache(hubCacheDir(), "model", ref.repo);
    const sha = cache.resolveRef(ref.revision);
    if (!sha) return null;
    const files = cache.snapshotFiles(sha).filter((f) => isModelFile(f.path));
    const dir = cache.snapshotDir(sha);
    if (
      !modelSnapshotComplete(
        dir,
        files.map((f) => f.path),
      )
    )
      return null;
    return { dir, revision: sha, bytes: files.reduce((sum, f) => sum + f.bytes, 0) };
  }

  /** The cached models the policy lets jobs use, by the names that reach them: `org/name` for main, `org/name@<ref or sha>` otherwise. */
  listCached(): { name: string; entry: HubModelEntry }[] {
    const out: { name: string; entry: HubModelEntry }[] = [];
    for (const repo of cachedRepos(hubCacheDir(), "model")) {
      if (!this.policy.allowsUse(repo)) continue;
      const cache = new RepoCache(hubCacheDir(), "model", repo);
      for (const snapshot of cache.snapshots()) {
        const names = snapshot.refs.length
          ? snapshot.refs.map((ref) => (ref === "main" ? repo : `${repo}@${ref}`))
          : [`${repo}@${snapshot.sha}`];
        for (const name of names) {
          const entry = this.cached(name);
          if (entry) out.push({ name, entry });
        }
      }
    }
    return out;
  }

  /** Why jobs may not use `name` (a Hub id), or null when they may. */
  refusal(name: string): string | null {
    const ref = parseHubName(name);
    if (!ref) return `${JSON.stringify(name)} is not a Hub model id (<org>/<name>[@<revision>])`;
    if (this.policy.allowsDownload(ref.repo)) return null;
    if (this.policy.allowsCached && this.cached(name)) return null;
    const rule = this.policy.describe();
    const example = `${ref.repo.split("/")[0]}/*`;
    if (this.policy.patterns.length === 1 && this.policy.allowsCached)
      return `Hub model ${name} is not in the Hugging Face cache, and this server downloads no Hub model (${rule}, the default): the operator allows downloads with patterns, e.g. --hub-models "${example},cached"`;
    const cached = this.policy.allowsCached ? " and it is not in the Hugging Face cache" : "";
    return `Hub model ${name} is not allowed on this server: it matches none of the patterns of ${rule}${cached}`;
  }

  /** config.json of `name` (fetched alone when the model is not cached) read by the engine, with the commit it came from. */
  async config(name: string, signal?: AbortSignal): Promise<{ config: ModelConfig; revision: string }> {
    const ref = parseHubName(name)!;
    const snapshot = await ensureSnapshot({
      repo: ref.repo,
      kind: "model",
      revision: ref.revision,
      wanted: isConfigFile,
      complete: (_dir, files) => files.includes("config.json"),
      signal,
    });
    return { config: readModelConfig(snapshot.dir), revision: snapshot.revision };
  }

  /** The model's files on disk: from the cache, else downloaded (shared with other callers). */
  fetch(
    name: string,
    options: Pick<EnsureSnapshotOptions, "onProgress" | "signal" | "refresh"> = {},
  ): Promise<HubSnapshot> {
    const ref = parseHubName(name)!;
    return ensureSnapshot({
      repo: ref.repo,
      kind: "model",
      revision: ref.revision,
      wanted: isModelFile,
      complete: modelSnapshotComplete,
      ...options,
    });
  }
}

/** The wire description of a Hub model that is not (completely) cached: what its config says, no size yet. */
export function uncachedInfo(info: BaseModelInfo, revision: string): BaseModelInfo {
  return { ...info, cached: false, revision, sizeBytes: null };
}
