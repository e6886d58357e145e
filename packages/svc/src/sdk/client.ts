// CloudApiClient: one method per /v1 route of the wire's route table (@svc/wire
// ROUTES; cloud-api.ts derives the methods' types). Most are made from the
// table by one generic call (call()); the few that are more than one JSON call
// are written here. Every non-2xx answer becomes a CloudApiError carrying the
// upstream status and the error body's code and message, so Studio can map it
// back to HTTP as is.
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type CreateDatasetFromHubRequest,
  type CreateDatasetFromUrlRequest,
  type Dataset,
  type DatasetProfileRequest,
  type DeploymentKey,
  fillPath,
  type HubDatasetSource,
  type InferArgs,
  LAST_EVENT_ID_HEADER,
  type Me,
  type ModelPull,
  type Project,
  type ProjectScope,
  type ResultOf,
  ROUTES,
  type Route,
  type RouteName,
  type RouteTable,
  type ToolCall,
} from "@svc/wire";
import {
  type CloudApiClientOptions,
  HAND_WRITTEN_ROUTES,
  type RouteArgs,
  type TableMethods,
  type TableRouteName,
} from "./cloud-api.js";
import {
  CloudApiError,
  HUB_DATASET_RESPONSE_TIMEOUT_MS,
  INFERENCE_RESPONSE_TIMEOUT_MS,
  type Query,
  type RequestOptions,
  readJson,
  safeParse,
  sendRequest,
} from "./cloud-request.js";
import { profileQuery } from "./dataset-profile.js";
import { readServerSentEvents } from "./server-sent-events.js";
import { ToolCallAssembler } from "./tool-call-stream.js";

export type { AuthConfig } from "@svc/wire";
export {
  CloudApiError,
  HUB_DATASET_RESPONSE_TIMEOUT_MS,
  INFERENCE_RESPONSE_TIMEOUT_MS,
  RESPONSE_TIMEOUT_MS,
} from "./cloud-request.js";

/** Routes that answer after long work on the server, and how long their answer may take to begin. */
const SLOW_ROUTES: Partial<Record<RouteName, number>> = {
  // merging and quantizing a large model takes minutes on the server
  createExport: HUB_DATASET_RESPONSE_TIMEOUT_MS,
};

// The table's methods are installed on the prototype right below the class
// (one generic call each); this interface gives them their types.
export interface CloudApiClient extends TableMethods {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the loop after the class defines every TableMethods member
export class CloudApiClient {
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

  /**
   * One route of the table, called with its arguments in the table's order
   * (path ids, body, query): its answer, unwrapped where the table says so.
   * The argument after the ids is a POST's or PATCH's body (absent: {}) and a
   * GET's or DELETE's query (cloud-api.ts checks that no table route has both).
   */
  async call<K extends RouteName>(name: K, ...args: RouteArgs<K>): Promise<ResultOf<RouteTable[K]>> {
    const route: Route = ROUTES[name];
    const ids = (route.path.match(/:/g) ?? []).length;
    const path = fillPath(route, args.slice(0, ids) as string[]);
    const last = args[ids] as Record<string, unknown> | undefined;
    const sendsBody = route.method === "POST" || route.method === "PATCH";
    const res = await this.request(route.method, path, {
      scoped: route.scoped,
      body: sendsBody ? (last ?? {}) : undefined,
      query: !sendsBody && last !== undefined ? stringQuery(last) : undefined,
      timeoutMs: SLOW_ROUTES[name],
    });
    const answer = await readJson<Record<string, unknown>>(res, route.method, path);
    if (res.status === 204) return undefined as ResultOf<RouteTable[K]>;
    return (route.unwrap === undefined ? answer : answer[route.unwrap]) as ResultOf<RouteTable[K]>;
  }

  // ------------------------------------------------------------ hand-written (HAND_WRITTEN_ROUTES)

  async me(): Promise<Me> {
    // an older server answered { me }
    const r = await this.json<Me | { me: Me }>("GET", ROUTES.me.path);
    return "me" in r ? r.me : r;
  }

  async listProjects(orgSlug: string): Promise<Project[]> {
    return (await this.json<{ projects: Project[] }>("GET", ROUTES.listProjects.path, { query: { orgSlug } }))
      .projects;
  }

  async pullModel(model: string): Promise<ModelPull> {
    return (await this.json<{ pull: ModelPull }>("POST", ROUTES.pullModel.path, { body: { model } })).pull;
  }

  /** `baseModel` starts the dataset's profile for that model at upload (getDatasetProfile reads it). */
  async uploadDataset(
    jsonl: string,
    options: { name?: string } & DatasetProfileRequest = {},
  ): Promise<Dataset> {
    const r = await this.json<{ dataset: Dataset }>("POST", ROUTES.createDataset.path, {
      scoped: true,
      query: { name: options.name, ...profileQuery(options) },
      rawBody: jsonl,
      contentType: "application/x-ndjson",
    });
    return r.dataset;
  }

  async createDatasetFromUrl(body: CreateDatasetFromUrlRequest): Promise<Dataset> {
    return (await this.json<{ dataset: Dataset }>("POST", ROUTES.createDataset.path, { scoped: true, body }))
      .dataset;
  }

  /** A Hub dataset's split, fetched and checked by the server (docs/hub.md#datasets). */
  async createDatasetFromHub(
    body: CreateDatasetFromHubRequest,
  ): Promise<{ dataset: Dataset; source: HubDatasetSource }> {
    return this.json<{ dataset: Dataset; source: HubDatasetSource }>("POST", ROUTES.createDataset.path, {
      scoped: true,
      body,
      timeoutMs: HUB_DATASET_RESPONSE_TIMEOUT_MS,
    });
  }

  /** The raw SSE response of GET /v1/jobs/:id/events (for proxies and the SDK's event reader). */
  async openJobEvents(
    jobId: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (options.lastEventId !== undefined) headers[LAST_EVENT_ID_HEADER] = options.lastEventId;
    return this.request("GET", fillPath(ROUTES.openJobEvents, [jobId]), {
      scoped: true,
      headers,
      signal: options.signal,
    });
  }

  /** The bytes of one file of an artifact, e.g. (jobId, "final", "adapter_config.json"). */
  async downloadArtifactFile(jobId: string, artifactName: string, filePath: string): Promise<Uint8Array> {
    // a file path's own "/" stay separators; each of its parts is encoded
    const artifact = fillPath(ROUTES.getArtifact, [jobId, artifactName]);
    const path = `${artifact}/${filePath.split("/").map(encodeURIComponent).join("/")}`;
    const res = await this.request("GET", path, { scoped: true });
    return new Uint8Array(await res.arrayBuffer());
  }

  /** One file of an export as a streamed response (GGUF files are large). */
  async openExportFile(
    exportId: string,
    filePath: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Response> {
    return this.request("GET", fillPath(ROUTES.openExportFile, [exportId, filePath]), {
      signal: options.signal,
    });
  }

  /** Non-streaming chat; see inferStream for stream: true. */
  async infer(args: InferArgs): Promise<ChatCompletion> {
    return this.json<ChatCompletion>("POST", ROUTES.infer.path, {
      scoped: true,
      body: { ...args, stream: false },
      timeoutMs: INFERENCE_RESPONSE_TIMEOUT_MS,
    });
  }

  /** Streaming chat: yields text deltas; each tool call the model makes goes whole to onToolCall. */
  async *inferStream(
    args: InferArgs,
    options: { signal?: AbortSignal; onToolCall?: (call: ToolCall) => void } = {},
  ): AsyncIterable<string> {
    const calls = new ToolCallAssembler(options.onToolCall);
    const res = await this.request("POST", ROUTES.infer.path, {
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

  async revokeDeploymentKey(deploymentId: string, keyId: string): Promise<DeploymentKey> {
    const path = fillPath(ROUTES.revokeDeploymentKey, [deploymentId, keyId]);
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

for (const name of Object.keys(ROUTES) as RouteName[]) {
  if ((HAND_WRITTEN_ROUTES as readonly RouteName[]).includes(name)) continue;
  Object.defineProperty(CloudApiClient.prototype, name, {
    value(this: CloudApiClient, ...args: unknown[]) {
      return this.call(name as TableRouteName, ...(args as RouteArgs<TableRouteName>));
    },
    writable: true,
    configurable: true,
  });
}

/** A query's values as the URL carries them (numbers written out; absent ones left out). */
function stringQuery(query: Record<string, unknown>): Query {
  const out: Query = {};
  for (const [k, v] of Object.entries(query)) if (v !== undefined) out[k] = String(v);
  return out;
}
