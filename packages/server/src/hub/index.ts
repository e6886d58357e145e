// The Hugging Face Hub: names, the shared cache, downloads (docs/hub.md).
export { cachedRepos, RepoCache, repoFolderName } from "./cache-layout.js";
export { HubError, type HubErrorCode, hubErrorStatus, type RepoKind, repoLabel } from "./hub-error.js";
export { hfHome, hubCacheDir, hubEndpoint, hubOffline, hubToken, hubTokenPath } from "./hub-settings.js";
export { indexShards, isConfigFile, isModelFile, modelSnapshotComplete } from "./model-files.js";
export { COMMIT_SHA, type HubRepoRef, hubName, parseHubName } from "./repo-name.js";
export {
  type EnsureSnapshotOptions,
  ensureSnapshot,
  type HubProgress,
  type HubSnapshot,
} from "./snapshot.js";
