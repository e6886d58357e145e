// The contract of CloudApiClient (client.ts implements it): one method per /v1
// route that the SDK and Studio use. Argument order is always: resource ids from
// outer to inner, then the request body, then options. The project scope
// (?orgSlug=&projectSlug=) comes from the client's construction, not the calls.
import type {
  AnonymousAuthResponse,
  Artifact,
  BaseModelInfo,
  ChatCompletion,
  CreateDatasetFromHubRequest,
  CreateDatasetFromUrlRequest,
  CreateDeploymentRequest,
  CreateExportArgs,
  CreateJobRequest,
  CreateProjectRequest,
  Dataset,
  DatasetProfile,
  DatasetProfileRequest,
  Deployment,
  DeploymentKey,
  DeploymentKeyUsage,
  ExportInfo,
  HubDatasetSource,
  InferArgs,
  IssuedDeploymentKey,
  Job,
  Me,
  ModelPull,
  Project,
  ProjectScope,
  ToolCall,
  UpdateDeploymentRequest,
  UpstreamInfo,
} from "@svc/wire";

/** Which profile of a dataset to read: the base model's, counted for maxLength (default 512). */
export interface DatasetProfileOptions {
  baseModel: string;
  maxLength?: number;
}

export interface CloudApiClientOptions {
  /** e.g. http://127.0.0.1:4100 (no /v1 suffix). */
  baseUrl: string;
  /** Bearer token from ~/.svc/credentials.json; absent only for createAnonymousIdentity. */
  token?: string;
  /** Project scope for scoped routes (jobs, datasets, inference, deployments). */
  scope?: ProjectScope;
  fetch?: typeof fetch;
}

/** Thrown for every non-2xx answer: status is the upstream HTTP status, code and message come from the error body. */
export interface CloudApiErrorShape {
  status: number;
  code: string;
  message: string;
}

export interface CloudApi {
  createAnonymousIdentity(): Promise<AnonymousAuthResponse>;
  me(): Promise<Me>;
  listProjects(orgSlug: string): Promise<Project[]>;
  createProject(body: CreateProjectRequest): Promise<Project>;
  listModels(): Promise<BaseModelInfo[]>;
  /** The external inference servers deployments may forward to (declared by the server's operator). */
  listUpstreams(): Promise<UpstreamInfo[]>;
  /** Starts (or joins) the server's download of a Hub model into its cache (docs/hub.md#serving-a-hub-model). */
  pullModel(model: string): Promise<ModelPull>;
  getModelPull(pullId: string): Promise<ModelPull>;

  /** `baseModel` starts the dataset's profile for that model at upload (getDatasetProfile reads it). */
  uploadDataset(jsonl: string, options?: { name?: string } & DatasetProfileRequest): Promise<Dataset>;
  createDatasetFromUrl(body: CreateDatasetFromUrlRequest): Promise<Dataset>;
  /** A Hub dataset's split, fetched and checked by the server (docs/hub.md#datasets). */
  createDatasetFromHub(
    body: CreateDatasetFromHubRequest,
  ): Promise<{ dataset: Dataset; source: HubDatasetSource }>;
  listDatasets(): Promise<Dataset[]>;
  getDataset(datasetId: string): Promise<Dataset>;
  /** The dataset's profile for a base model; status "pending" (with progress) until it is computed. */
  getDatasetProfile(datasetId: string, options: DatasetProfileOptions): Promise<DatasetProfile>;

  createJob(body: CreateJobRequest): Promise<Job>;
  listJobs(): Promise<Job[]>;
  getJob(jobId: string): Promise<Job>;
  cancelJob(jobId: string): Promise<Job>;
  /** POST /v1/jobs/:id/pause: a running job checkpoints and stops, and waits as "paused" (docs/api.md#pause-and-resume). */
  pauseJob(jobId: string): Promise<Job>;
  /** POST /v1/jobs/:id/resume: a paused job is queued again, to go on from its checkpoint. */
  resumeJob(jobId: string): Promise<Job>;
  /** The raw SSE response of GET /v1/jobs/:id/events (for proxies and the SDK's event reader). */
  openJobEvents(jobId: string, options?: { lastEventId?: string; signal?: AbortSignal }): Promise<Response>;
  listArtifacts(jobId: string): Promise<Artifact[]>;
  getArtifact(jobId: string, artifactName: string): Promise<Artifact>;
  /** The bytes of one file of an artifact, e.g. (jobId, "final", "adapter_config.json"). */
  downloadArtifactFile(jobId: string, artifactName: string, filePath: string): Promise<Uint8Array>;

  /** Writes an export on the server (PEFT, merged or GGUF); resolves once it is written. */
  createExport(body: CreateExportArgs): Promise<ExportInfo>;
  getExport(exportId: string): Promise<ExportInfo>;
  deleteExport(exportId: string): Promise<ExportInfo>;
  /** One file of an export as a streamed response (GGUF files are large). */
  openExportFile(exportId: string, filePath: string, options?: { signal?: AbortSignal }): Promise<Response>;

  /** Non-streaming chat; see inferStream for stream: true. */
  infer(args: InferArgs): Promise<ChatCompletion>;
  /** Streaming chat: yields text deltas; each tool call the model makes goes whole to onToolCall. */
  inferStream(
    args: InferArgs,
    options?: { signal?: AbortSignal; onToolCall?: (call: ToolCall) => void },
  ): AsyncIterable<string>;

  createDeployment(body: CreateDeploymentRequest): Promise<Deployment>;
  listDeployments(): Promise<Deployment[]>;
  getDeployment(deploymentId: string): Promise<Deployment>;
  updateDeployment(deploymentId: string, body: UpdateDeploymentRequest): Promise<Deployment>;
  deleteDeployment(deploymentId: string): Promise<void>;
  issueDeploymentKey(deploymentId: string, body: { label: string }): Promise<IssuedDeploymentKey>;
  listDeploymentKeys(deploymentId: string): Promise<DeploymentKey[]>;
  revokeDeploymentKey(deploymentId: string, keyId: string): Promise<DeploymentKey>;
  /** Per-UTC-day usage of a key over the last `days` days (server default 30), oldest first. */
  getDeploymentKeyUsage(
    deploymentId: string,
    keyId: string,
    options?: { days?: number },
  ): Promise<DeploymentKeyUsage>;
}
