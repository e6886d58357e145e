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
  Job,
  Me,
  ModelPull,
  Project,
  ProjectScope,
  ToolCall,
  UpdateDeploymentRequest,
  UpstreamInfo,
} from "@svc/server/wire";
import type {
  CloudApi,
  CloudApiClientOptions,
  CloudApiErrorShape,
  DatasetProfileOptions,
} from "./cloud-api.js";
import { profileQuery } from "./dataset-profile.js";
import { readServerSentEvents } from "./server-sent-events.js";
import { ToolCallAssembler } from "./tool-call-stream.js";

export class CloudApiError extends Error implements CloudApiErrorShape {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "CloudApiError";
    this.status = status;
    this.code = code;
  }
}

/** What GET /v1/auth/config answers: the identity provider `svc login` signs in with. */
export interface AuthConfig {
  oidc: { issuer: string; clientId: string; audience?: string; scopes?: string[] } | null;
}

type Query = Record<string, string | undefined>;

/**
 * How long a request waits for the response to begin before the cloud API
 * counts as hung (a dead one fails at once): no command hangs silently on a
 * stopped server. SVC_API_RESPONSE_TIMEOUT_MS overrides it (tests).
 */
export const RESPONSE_TIMEOUT_MS = 60_000;
/** Inference answers after the whole completion (or, streamed, after the prompt's prefill): more time. */
export const INFERENCE_RESPONSE_TIMEOUT_MS = 600_000;
/** A Hub dataset answers once its split is downloaded and checked: a large one takes a while. */
export const HUB_DATASET_RESPONSE_TIMEOUT_MS = 3_600_000;

function responseTimeoutMs(fallback: number): number {
  const n = Number(process.env.SVC_API_RESPONSE_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

interface RequestOptions {
  query?: Query;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  scoped?: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Default RESPONSE_TIMEOUT_MS. */
  timeoutMs?: number;
}

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
    const res = await this.request(method, path, options);
    const text = await res.text();
    if (text === "") return {} as T;
    const body = safeParse(text);
    if (body === null)
      throw new CloudApiError(res.status, "bad_response", `${method} ${path}: answer is not JSON`);
    return body as T;
  }

  /** Sends one request; resolves with the Response for 2xx and throws CloudApiError otherwise. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    const query: Query = { ...options.query };
    if (options.scoped) {
      if (!this.scope) {
        throw new CloudApiError(
          0,
          "missing_scope",
          `${method} ${path} needs a project scope (orgSlug, projectSlug)`,
        );
      }
      query.orgSlug = this.scope.orgSlug;
      query.projectSlug = this.scope.projectSlug;
    }
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    const headers: Record<string, string> = { ...options.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (options.rawBody !== undefined) {
      body = options.rawBody;
      headers["Content-Type"] = options.contentType ?? "application/octet-stream";
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] = "application/json";
    }
    const timeoutMs = responseTimeoutMs(options.timeoutMs ?? RESPONSE_TIMEOUT_MS);
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
    let res: Response;
    try {
      res = await this.fetchImpl(url, { method, headers, body, signal });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (timeout.signal.aborted)
        throw new CloudApiError(
          0,
          "timeout",
          `the cloud API at ${this.baseUrl} did not answer ${method} ${path} within ${Math.round(timeoutMs / 1000)}s; it may be hung (see svc server status and its log)`,
        );
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new CloudApiError(
        0,
        "unreachable",
        `cannot reach the cloud API at ${this.baseUrl}${cause ? ` (${cause})` : ""}: ${(err as Error).message}`,
      );
    } finally {
      clearTimeout(timer);
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    const parsed = safeParse(text) as { error?: { message?: string; code?: string } } | null;
    const message = parsed?.error?.message ?? (text.trim() || res.statusText || `HTTP ${res.status}`);
    throw new CloudApiError(res.status, parsed?.error?.code ?? `http_${res.status}`, message);
  }
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
