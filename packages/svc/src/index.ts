// The `svc` SDK: import { createTrainer, createSvc, infer, CloudApiClient } from "svc".
// Wire types are the server's own (one definition, shared), re-exported here.
export * from "@svc/wire";
export {
  type ApiNotice,
  ApiUnreachableError,
  formatApiNotice,
  GIVE_UP_MS,
  type StreamRecovery,
} from "./sdk/api-recovery.js";
export { type AuthConfig, CloudApiClient, CloudApiError } from "./sdk/client.js";
export type {
  CloudApi,
  CloudApiClientOptions,
  CloudApiErrorShape,
  DatasetProfileOptions,
} from "./sdk/cloud-api.js";
export { cloudApiUrl, DEFAULT_CLOUD_API_URL, isDefaultCloudApi } from "./sdk/config.js";
export {
  type AnonymousCredentials,
  bearerToken,
  type Credentials,
  credentialsPath,
  ensureCredentials,
  type OAuthCredentials,
  readCredentials,
} from "./sdk/credentials.js";
export { type WaitForDatasetProfileOptions, waitForDatasetProfile } from "./sdk/dataset-profile.js";
export { type ExportedFiles, ExportFailedError, type ExportModelOptions, exportModel } from "./sdk/export.js";
export {
  type BoundInfer,
  type InferOptions,
  type InferRequest,
  type InferResult,
  type InferTarget,
  infer,
} from "./sdk/infer.js";
export {
  type JobEventStreamOptions,
  type ReceivedJobEvent,
  streamJobEvents,
} from "./sdk/job-event-stream.js";
export { ensureLocalServer } from "./sdk/local-server.js";
export {
  type BaseModelName,
  type CheckedModelName,
  type HubModelId,
  SUPPORTED_MODELS,
  type SupportedModel,
} from "./sdk/models.js";
export {
  ensureProjectState,
  MissingProjectStateError,
  type ProjectState,
  projectStatePath,
  readProjectState,
} from "./sdk/project-state.js";
export { openScopedSession, openSession, type ScopedSvcSession, type SvcSession } from "./sdk/session.js";
export { createSvc, type SvcManifest } from "./sdk/svc.js";
export {
  createTrainer,
  type HubDatasetNotice,
  type StartOverrides,
  type Trainer,
  type TrainerResult,
  TrainingCancelledError,
  TrainingFailedError,
  type WaitOptions,
} from "./sdk/trainer.js";
export type { ChatExample, DatasetSource, TrainerCallbacks, TrainerOptions } from "./sdk/trainer-options.js";

export const SVC_VERSION = "0.1.0";
