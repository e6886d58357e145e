// CloudApiClient: one method per /v1 route (see cloud-api.ts for the contract).
// Every non-2xx answer becomes a CloudApiError carrying the upstream status and
// the error body's code and message, so Studio can map it back to HTTP as is.
import type {
  AnonymousAuthResponse,
  Artifact,
  BaseModelInfo,
  ChatCompletion,
  ChatCompletionChunk,
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
  IssuedProjectKey,
  Job,
  Me,
  ModelPull,
  Project,
  ProjectKey,
  ProjectScope,
  ToolCall,
  UpdateDeploymentRequest,
  UpstreamInfo,
} from "@svc/wire";
import type { CloudApi, CloudApiClientOptions, DatasetProfileOptions } from "./cloud-api.js";
import {
  type AuthConfig,
  CloudApiError,
  HUB_DATASET_RESPONSE_TIMEOUT_MS,
  INFERENCE_RESPONSE_TIMEOUT_MS,
  type RequestOptions,
  readJson,
  safeParse,
  sendRequest,
} from "./cloud-request.js";
import { profileQuery } from "./dataset-profile.js";
import { readServerSentEvents } from "./server-sent-events.js";
import { ToolCallAssembler } from "./tool-call-stream.js";

export {
  type AuthConfig,
  CloudApiError,
  HUB_DATASET_RESPONSE_TIMEOUT_MS,
  INFERENCE_RESPONSE_TIMEOUT_MS,
  RESPONSE_TIMEOUT_MS,
} from "./cloud-request.js";

export class CloudApiClient implements CloudApi {
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly scope: ProjectScope | undefined;
  private readonly fetchImpl: typeof fetch;

  constructor(options: CloudApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.scope = options.scope;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** A copy of this client bound to another project scope or token. */
  with(changes: Partial<Pick<CloudApiClientOptions, "token" | "scope">>): CloudApiClient {
    return new CloudApiClient({
      baseUrl: this.baseUrl,
      token: "token" in changes ? changes.token : this.token,
      scope: "scope" in changes ? changes.scope : this.scope,
      fetch: this.fetchImpl,
    });
  }

  // ------------------------------------------------------------ identity

  async createAnonymousIdentity(): Promise<AnonymousAuthResponse> {
    return this.json<AnonymousAuthResponse>("POST", "/v1/auth/anonymous", { body: {} });
  }

  async authConfig(): Promise<AuthConfig> {
    return this.json<AuthConfig>("GET", "/v1/auth/config");
  }

  async me(): Promise<Me> {
    const r = await this.json<Me | { me: Me }>("GET", "/v1/me");
    return "me" in r ? r.me : r;
  }

  async listProjects(orgSlug: string): Promise<Project[]> {
    return (await this.json<{ projects: Project[] }>("GET", "/v1/projects", { query: { orgSlug } })).projects;
  }

  async createProject(body: CreateProjectRequest): Promise<Project> {
    return (await this.json<{ project: Project }>("POST", "/v1/projects", { body })).project;
  }

  async listModels(): Promise<BaseModelInfo[]> {
    return (await this.json<{ models: BaseModelInfo[] }>("GET", "/v1/models")).models;
  }

  async pullModel(model: string): Promise<ModelPull> {
    return (await this.json<{ pull: ModelPull }>("POST", "/v1/models/pull", { body: { model } })).pull;
  }

  async getModelPull(pullId: string): Promise<ModelPull> {
    return (await this.json<{ pull: ModelPull }>("GET", `/v1/models/pull/${seg(pullId)}`)).pull;
  }

  async listUpstreams(): Promise<UpstreamInfo[]> {
    return (await this.json<{ upstreams: UpstreamInfo[] }>("GET", "/v1/upstreams")).upstreams;
  }

  // ------------------------------------------------------------ datasets

  async uploadDataset(
    jsonl: string,
    options: { name?: string } & DatasetProfileRequest = {},
  ): Promise<Dataset> {
    const r = await this.json<{ dataset: Dataset }>("POST", "/v1/datasets", {
      scoped: true,
      query: { name: options.name, ...profileQuery(options) },
      rawBody: jsonl,
      contentType: "application/x-ndjson",
    });
    return r.dataset;
  }

  async createDatasetFromUrl(body: CreateDatasetFromUrlRequest): Promise<Dataset> {
    return (await this.json<{ dataset: Dataset }>("POST", "/v1/datasets", { scoped: true, body })).dataset;
  }

  async createDatasetFromHub(
    body: CreateDatasetFromHubRequest,
  ): Promise<{ dataset: Dataset; source: HubDatasetSource }> {
    return this.json<{ dataset: Dataset; source: HubDatasetSource }>("POST", "/v1/datasets", {
      scoped: true,
      body,
      timeoutMs: HUB_DATASET_RESPONSE_TIMEOUT_MS,
    });
  }

  async listDatasets(): Promise<Dataset[]> {
    return (await this.json<{ datasets: Dataset[] }>("GET", "/v1/datasets", { scoped: true })).datasets;
  }

  async getDataset(datasetId: string): Promise<Dataset> {
    return (await this.json<{ dataset: Dataset }>("GET", `/v1/datasets/${seg(datasetId)}`)).dataset;
  }

  async getDatasetProfile(datasetId: string, options: DatasetProfileOptions): Promise<DatasetProfile> {
    const path = `/v1/datasets/${seg(datasetId)}/profile`;
    return (await this.json<{ profile: DatasetProfile }>("GET", path, { query: profileQuery(options) }))
      .profile;
  }

  // ------------------------------------------------------------ jobs

  async createJob(body: CreateJobRequest): Promise<Job> {
    return (await this.json<{ job: Job }>("POST", "/v1/jobs", { scoped: true, body })).job;
  }

  async listJobs(): Promise<Job[]> {
    return (await this.json<{ jobs: Job[] }>("GET", "/v1/jobs", { scoped: true })).jobs;
  }

  async getJob(jobId: string): Promise<Job> {
    return (await this.json<{ job: Job }>("GET", `/v1/jobs/${seg(jobId)}`, { scoped: true })).job;
  }

  async pauseJob(jobId: string): Promise<Job> {
    return (await this.json<{ job: Job }>("POST", `/v1/jobs/${seg(jobId)}/pause`, { scoped: true, body: {} }))
      .job;
  }

  async resumeJob(jobId: string): Promise<Job> {
    return (
      await this.json<{ job: Job }>("POST", `/v1/jobs/${seg(jobId)}/resume`, { scoped: true, body: {} })
    ).job;
  }

  async cancelJob(jobId: string): Promise<Job> {
    return (
      await this.json<{ job: Job }>("POST", `/v1/jobs/${seg(jobId)}/cancel`, { scoped: true, body: {} })
    ).job;
  }

  async openJobEvents(
    jobId: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (options.lastEventId !== undefined) headers["Last-Event-ID"] = options.lastEventId;
    return this.request("GET", `/v1/jobs/${seg(jobId)}/events`, {
      scoped: true,
      headers,
      signal: options.signal,
    });
  }

  async listArtifacts(jobId: string): Promise<Artifact[]> {
    return (
      await this.json<{ artifacts: Artifact[] }>("GET", `/v1/jobs/${seg(jobId)}/artifacts`, { scoped: true })
    ).artifacts;
  }

  async getArtifact(jobId: string, artifactName: string): Promise<Artifact> {
    const path = `/v1/jobs/${seg(jobId)}/artifacts/${seg(artifactName)}`;
    return (await this.json<{ artifact: Artifact }>("GET", path, { scoped: true })).artifact;
  }

  /** The bytes of one artifact file, e.g. ("<job>", "final", "adapter_config.json"). */
  async downloadArtifactFile(jobId: string, artifactName: string, filePath: string): Promise<Uint8Array> {
    const path = `/v1/jobs/${seg(jobId)}/artifacts/${seg(artifactName)}/${filePath.split("/").map(seg).join("/")}`;
    const res = await this.request("GET", path, { scoped: true });
    return new Uint8Array(await res.arrayBuffer());
  }

  // ------------------------------------------------------------ exports

  async createExport(body: CreateExportArgs): Promise<ExportInfo> {
    // merging and quantizing a large model takes minutes on the server
    const options = { scoped: true, body, timeoutMs: HUB_DATASET_RESPONSE_TIMEOUT_MS };
    return (await this.json<{ export: ExportInfo }>("POST", "/v1/exports", options)).export;
  }

  async getExport(exportId: string): Promise<ExportInfo> {
    return (await this.json<{ export: ExportInfo }>("GET", `/v1/exports/${seg(exportId)}`)).export;
  }

  async deleteExport(exportId: string): Promise<ExportInfo> {
    return (await this.json<{ export: ExportInfo }>("DELETE", `/v1/exports/${seg(exportId)}`)).export;
  }

  async openExportFile(
    exportId: string,
    filePath: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Response> {
    return this.request("GET", `/v1/exports/${seg(exportId)}/${seg(filePath)}`, { signal: options.signal });
  }

  // ------------------------------------------------------------ inference

  async infer(args: InferArgs): Promise<ChatCompletion> {
    return this.json<ChatCompletion>("POST", "/v1/inference/chat", {
      scoped: true,
      body: { ...args, stream: false },
      timeoutMs: INFERENCE_RESPONSE_TIMEOUT_MS,
    });
  }

  async *inferStream(
    args: InferArgs,
    options: { signal?: AbortSignal; onToolCall?: (call: ToolCall) => void } = {},
  ): AsyncIterable<string> {
    const calls = new ToolCallAssembler(options.onToolCall);
    const res = await this.request("POST", "/v1/inference/chat", {
      scoped: true,
      body: { ...args, stream: true },
      signal: options.signal,
      headers: { Accept: "text/event-stream" },
      timeoutMs: INFERENCE_RESPONSE_TIMEOUT_MS,
    });
    if (!res.body) return;
    for await (const frame of readServerSentEvents(res.body)) {
      if (frame.data === "[DONE]") return calls.finish();
      if (frame.event === "error") {
        const body = safeParse(frame.data) as { error?: { message?: string; code?: string } } | null;
        throw new CloudApiError(500, body?.error?.code ?? "stream_error", body?.error?.message ?? frame.data);
      }
      const chunk = safeParse(frame.data) as
        | (ChatCompletionChunk & { error?: { message: string; code?: string } })
        | null;
      if (!chunk) continue;
      if (chunk.error) throw new CloudApiError(500, chunk.error.code ?? "stream_error", chunk.error.message);
      const delta = chunk.choices?.[0]?.delta;
      if (delta?.content) yield delta.content;
      for (const d of delta?.tool_calls ?? []) calls.add(d);
    }
    calls.finish();
  }

  // ------------------------------------------------------------ deployments

  async createDeployment(body: CreateDeploymentRequest): Promise<Deployment> {
    return (await this.json<{ deployment: Deployment }>("POST", "/v1/endpoints", { scoped: true, body }))
      .deployment;
  }

  async listDeployments(): Promise<Deployment[]> {
    return (await this.json<{ deployments: Deployment[] }>("GET", "/v1/endpoints", { scoped: true }))
      .deployments;
  }

  async getDeployment(deploymentId: string): Promise<Deployment> {
    return (
      await this.json<{ deployment: Deployment }>("GET", `/v1/endpoints/${seg(deploymentId)}`, {
        scoped: true,
      })
    ).deployment;
  }

  async updateDeployment(deploymentId: string, body: UpdateDeploymentRequest): Promise<Deployment> {
    const path = `/v1/endpoints/${seg(deploymentId)}`;
    return (await this.json<{ deployment: Deployment }>("PATCH", path, { scoped: true, body })).deployment;
  }

  async deleteDeployment(deploymentId: string): Promise<void> {
    await this.request("DELETE", `/v1/endpoints/${seg(deploymentId)}`, { scoped: true });
  }

  async issueDeploymentKey(deploymentId: string, body: { label: string }): Promise<IssuedDeploymentKey> {
    const path = `/v1/endpoints/${seg(deploymentId)}/keys`;
    return (await this.json<{ key: IssuedDeploymentKey }>("POST", path, { scoped: true, body })).key;
  }

  async listDeploymentKeys(deploymentId: string): Promise<DeploymentKey[]> {
    const path = `/v1/endpoints/${seg(deploymentId)}/keys`;
    return (await this.json<{ keys: DeploymentKey[] }>("GET", path, { scoped: true })).keys;
  }

  /** A project API key for the OpenAI routes (docs/openai-fine-tuning.md#project-api-keys); its plaintext only here. */
  async issueProjectKey(body: { label: string }): Promise<IssuedProjectKey> {
    return (await this.json<{ key: IssuedProjectKey }>("POST", "/v1/project-keys", { scoped: true, body }))
      .key;
  }

  async listProjectKeys(): Promise<ProjectKey[]> {
    return (await this.json<{ keys: ProjectKey[] }>("GET", "/v1/project-keys", { scoped: true })).keys;
  }

  async revokeProjectKey(keyId: string): Promise<ProjectKey> {
    const path = `/v1/project-keys/${seg(keyId)}`;
    return (await this.json<{ key: ProjectKey }>("DELETE", path, { scoped: true })).key;
  }

  async revokeDeploymentKey(deploymentId: string, keyId: string): Promise<DeploymentKey> {
    const path = `/v1/endpoints/${seg(deploymentId)}/keys/${seg(keyId)}`;
    const res = await this.request("DELETE", path, { scoped: true });
    const text = await res.text();
    const body = safeParse(text) as { key?: DeploymentKey } | null;
    if (body?.key) return body.key;
    // A server that answers 204 leaves us to read the key back.
    const keys = await this.listDeploymentKeys(deploymentId);
    const key = keys.find((k) => k.id === keyId);
    if (!key) throw new CloudApiError(404, "not_found", `key ${keyId} not found after revoke`);
    return key;
  }

  async getDeploymentKeyUsage(
    deploymentId: string,
    keyId: string,
    options: { days?: number } = {},
  ): Promise<DeploymentKeyUsage> {
    const path = `/v1/endpoints/${seg(deploymentId)}/keys/${seg(keyId)}/usage`;
    const query = { days: options.days === undefined ? undefined : String(options.days) };
    return (await this.json<{ usage: DeploymentKeyUsage }>("GET", path, { scoped: true, query })).usage;
  }

  // ------------------------------------------------------------ transport

  private async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return readJson<T>(await this.request(method, path, options), method, path);
  }

  /** Sends one request; resolves with the Response for 2xx and throws CloudApiError otherwise. */
  request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const { baseUrl, token, scope, fetchImpl } = this;
    return sendRequest({ baseUrl, token, scope, fetch: fetchImpl }, method, path, options);
  }
}

function seg(s: string): string {
  return encodeURIComponent(s);
}
