// The route table of the cloud API (/v1): each route's method, path, whether
// it takes the project scope (?orgSlug=&projectSlug=), and the types of its
// body, query and answer. The SDK's CloudApiClient is typed from it (its
// methods are these keys), and packages/server/test/route-table.test.ts fails
// when a route is mounted that is not here or one here is not mounted.
// OpenAI's routes (docs/openai-fine-tuning.md) are in OPENAI_ROUTES: their
// shapes are OpenAI's, which the official openai client types.

import type { BaseModelInfo } from "./base-models.js";
import type { Artifact } from "./common.js";
import type { DatasetProfile, DatasetProfileRequest } from "./dataset-profiles.js";
import type {
  CreateDatasetFromHubRequest,
  CreateDatasetFromUrlRequest,
  Dataset,
  HubDatasetSource,
} from "./datasets.js";
import type {
  CreateDeploymentRequest,
  Deployment,
  DeploymentKey,
  DeploymentKeyUsage,
  IssuedDeploymentKey,
  UpdateDeploymentRequest,
  UpstreamInfo,
} from "./deployments.js";
import type { CreateExportArgs, ExportInfo } from "./exports.js";
import type { AnonymousAuthResponse, CreateProjectRequest, Me, Project } from "./identity.js";
import type { ChatCompletion, InferArgs } from "./inference.js";
import type { CreateJobRequest, Job } from "./jobs.js";
import type { ModelPull } from "./model-pulls.js";
import type { IssuedProjectKey, ProjectKey } from "./project-keys.js";
import type { ScoringAnswer, ScoringClaimResponse } from "./scoring.js";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/** What a route answers with: a JSON body, a server-sent event stream, or a file's bytes. */
export type AnswerKind = "json" | "events" | "bytes";

/** No body, or no query: the route takes none. */
export type None = undefined;

export interface Route<
  Method extends HttpMethod = HttpMethod,
  Path extends string = string,
  Body = unknown,
  Query = unknown,
  Answer = unknown,
  Unwrap extends string | None = string | None,
> {
  readonly method: Method;
  /** Hono's pattern, as the server mounts it: `:name` a path segment. */
  readonly path: Path;
  /** Whether the request carries the project scope (?orgSlug=&projectSlug=). */
  readonly scoped: boolean;
  readonly answers: AnswerKind;
  /** The field of the JSON answer that holds the resource ({ job } → the Job); absent: the answer is it. */
  readonly unwrap?: Unwrap;
  /** Types only, never set at runtime: what the body, the query and the JSON answer are. */
  readonly types?: { body: Body; query: Query; answer: Answer };
}

interface RouteOptions<Unwrap extends string | None> {
  scoped?: boolean;
  answers?: AnswerKind;
  unwrap?: Unwrap;
}

/** One table entry; the generic arguments are the body, the query and the answer's types. */
function route<Body = None, Query = None, Answer = unknown>() {
  return <
    const Method extends HttpMethod,
    const Path extends string,
    const Unwrap extends string | None = None,
  >(
    method: Method,
    path: Path,
    options: RouteOptions<Unwrap> = {},
  ): Route<Method, Path, Body, Query, Answer, Unwrap> => ({
    method,
    path,
    scoped: options.scoped ?? false,
    answers: options.answers ?? "json",
    ...(options.unwrap === undefined ? {} : { unwrap: options.unwrap }),
  });
}

const scoped = { scoped: true } as const;

/** svc's own /v1 routes, by the name of the CloudApiClient method that calls each. */
export const ROUTES = {
  // identity (docs/api.md#identity)
  createAnonymousIdentity: route<None, None, AnonymousAuthResponse>()("POST", "/v1/auth/anonymous"),
  authConfig: route<None, None, AuthConfig>()("GET", "/v1/auth/config"),
  me: route<None, None, Me>()("GET", "/v1/me"),
  listProjects: route<None, { orgSlug: string }, { projects: Project[] }>()("GET", "/v1/projects", {
    unwrap: "projects",
  }),
  createProject: route<CreateProjectRequest, None, { project: Project }>()("POST", "/v1/projects", {
    unwrap: "project",
  }),

  // base models
  listModels: route<None, None, { models: BaseModelInfo[] }>()("GET", "/v1/models", { unwrap: "models" }),
  listUpstreams: route<None, None, { upstreams: UpstreamInfo[] }>()("GET", "/v1/upstreams", {
    unwrap: "upstreams",
  }),
  pullModel: route<{ model: string }, None, { pull: ModelPull }>()("POST", "/v1/models/pull", {
    unwrap: "pull",
  }),
  getModelPull: route<None, None, { pull: ModelPull }>()("GET", "/v1/models/pull/:id", { unwrap: "pull" }),

  // datasets: the JSONL text (Content-Type application/x-ndjson, ?name=&baseModel=&maxLength=) or JSON
  createDataset: route<
    CreateDatasetFromUrlRequest | CreateDatasetFromHubRequest,
    { name?: string } & DatasetProfileRequest,
    { dataset: Dataset; source?: HubDatasetSource; profile?: DatasetProfile }
  >()("POST", "/v1/datasets", scoped),
  listDatasets: route<None, None, { datasets: Dataset[] }>()("GET", "/v1/datasets", {
    ...scoped,
    unwrap: "datasets",
  }),
  getDataset: route<None, None, { dataset: Dataset }>()("GET", "/v1/datasets/:id", { unwrap: "dataset" }),
  getDatasetProfile: route<None, DatasetProfileOptions, { profile: DatasetProfile }>()(
    "GET",
    "/v1/datasets/:id/profile",
    { unwrap: "profile" },
  ),

  // jobs
  createJob: route<CreateJobRequest, None, { job: Job }>()("POST", "/v1/jobs", { ...scoped, unwrap: "job" }),
  listJobs: route<None, None, { jobs: Job[] }>()("GET", "/v1/jobs", { ...scoped, unwrap: "jobs" }),
  getJob: route<None, None, { job: Job }>()("GET", "/v1/jobs/:id", { ...scoped, unwrap: "job" }),
  cancelJob: route<None, None, { job: Job }>()("POST", "/v1/jobs/:id/cancel", { ...scoped, unwrap: "job" }),
  pauseJob: route<None, None, { job: Job }>()("POST", "/v1/jobs/:id/pause", { ...scoped, unwrap: "job" }),
  resumeJob: route<None, None, { job: Job }>()("POST", "/v1/jobs/:id/resume", { ...scoped, unwrap: "job" }),
  /**
   * A GRPO job's next scoring batch for its trainer's rewards, or 204 after ?wait= seconds (default 20;
   * scoring.ts). The SDK's scorer (packages/svc/src/sdk/reward-scorer.ts) calls it with the query, by hand.
   */
  claimScoringBatch: route<Record<string, never>, None, ScoringClaimResponse>()(
    "POST",
    "/v1/jobs/:id/scoring/claim",
    scoped,
  ),
  answerScoringBatch: route<ScoringAnswer, None, { batchId: string; step: number; answered: string }>()(
    "POST",
    "/v1/jobs/:id/scoring/:batchId",
    scoped,
  ),
  /** The job's event stream (job-events.ts); Last-Event-ID resumes after an event. */
  openJobEvents: route()("GET", "/v1/jobs/:id/events", { ...scoped, answers: "events" }),
  listArtifacts: route<None, None, { artifacts: Artifact[] }>()("GET", "/v1/jobs/:id/artifacts", {
    ...scoped,
    unwrap: "artifacts",
  }),
  getArtifact: route<None, None, { artifact: Artifact }>()("GET", "/v1/jobs/:id/artifacts/:name", {
    ...scoped,
    unwrap: "artifact",
  }),
  downloadArtifactFile: route()("GET", "/v1/jobs/:id/artifacts/:name/:file", { ...scoped, answers: "bytes" }),

  // exports
  createExport: route<CreateExportArgs, None, { export: ExportInfo }>()("POST", "/v1/exports", {
    ...scoped,
    unwrap: "export",
  }),
  getExport: route<None, None, { export: ExportInfo }>()("GET", "/v1/exports/:id", { unwrap: "export" }),
  deleteExport: route<None, None, { export: ExportInfo }>()("DELETE", "/v1/exports/:id", {
    unwrap: "export",
  }),
  openExportFile: route()("GET", "/v1/exports/:id/:file", { answers: "bytes" }),

  // inference: JSON, or with stream true OpenAI's chat.completion.chunk events
  infer: route<InferArgs, None, ChatCompletion>()("POST", "/v1/inference/chat", scoped),

  // deployments (/v1/endpoints) and their keys
  createDeployment: route<CreateDeploymentRequest, None, { deployment: Deployment }>()(
    "POST",
    "/v1/endpoints",
    {
      ...scoped,
      unwrap: "deployment",
    },
  ),
  listDeployments: route<None, None, { deployments: Deployment[] }>()("GET", "/v1/endpoints", {
    ...scoped,
    unwrap: "deployments",
  }),
  getDeployment: route<None, None, { deployment: Deployment }>()("GET", "/v1/endpoints/:id", {
    ...scoped,
    unwrap: "deployment",
  }),
  updateDeployment: route<UpdateDeploymentRequest, None, { deployment: Deployment }>()(
    "PATCH",
    "/v1/endpoints/:id",
    { ...scoped, unwrap: "deployment" },
  ),
  /** Answers 204, no body. */
  deleteDeployment: route<None, None, void>()("DELETE", "/v1/endpoints/:id", scoped),
  issueDeploymentKey: route<{ label: string }, None, { key: IssuedDeploymentKey }>()(
    "POST",
    "/v1/endpoints/:id/keys",
    { ...scoped, unwrap: "key" },
  ),
  listDeploymentKeys: route<None, None, { keys: DeploymentKey[] }>()("GET", "/v1/endpoints/:id/keys", {
    ...scoped,
    unwrap: "keys",
  }),
  revokeDeploymentKey: route<None, None, { key: DeploymentKey }>()(
    "DELETE",
    "/v1/endpoints/:id/keys/:keyId",
    {
      ...scoped,
      unwrap: "key",
    },
  ),
  /** Per-UTC-day usage over the last `days` days (default 30). */
  getDeploymentKeyUsage: route<None, { days?: number }, { usage: DeploymentKeyUsage }>()(
    "GET",
    "/v1/endpoints/:id/keys/:keyId/usage",
    { ...scoped, unwrap: "usage" },
  ),

  // project API keys (docs/openai-fine-tuning.md#project-api-keys)
  issueProjectKey: route<{ label: string }, None, { key: IssuedProjectKey }>()("POST", "/v1/project-keys", {
    ...scoped,
    unwrap: "key",
  }),
  listProjectKeys: route<None, None, { keys: ProjectKey[] }>()("GET", "/v1/project-keys", {
    ...scoped,
    unwrap: "keys",
  }),
  revokeProjectKey: route<None, None, { key: ProjectKey }>()("DELETE", "/v1/project-keys/:keyId", {
    ...scoped,
    unwrap: "key",
  }),
} as const;

/**
 * OpenAI's routes on the cloud API (docs/openai-fine-tuning.md), in OpenAI's
 * shapes and error shape; the official openai client calls them, so the wire
 * gives no types for their bodies. Scoped by the project key (or the scope query).
 */
export const OPENAI_ROUTES = {
  getModel: route()("GET", "/v1/models/:id{.+}"),
  deleteModel: route()("DELETE", "/v1/models/:id{.+}"),
  createFile: route()("POST", "/v1/files"),
  listFiles: route()("GET", "/v1/files"),
  getFile: route()("GET", "/v1/files/:id"),
  deleteFile: route()("DELETE", "/v1/files/:id"),
  getFileContent: route()("GET", "/v1/files/:id/content", { answers: "bytes" }),
  createFineTuningJob: route()("POST", "/v1/fine_tuning/jobs"),
  listFineTuningJobs: route()("GET", "/v1/fine_tuning/jobs"),
  getFineTuningJob: route()("GET", "/v1/fine_tuning/jobs/:id"),
  cancelFineTuningJob: route()("POST", "/v1/fine_tuning/jobs/:id/cancel"),
  pauseFineTuningJob: route()("POST", "/v1/fine_tuning/jobs/:id/pause"),
  resumeFineTuningJob: route()("POST", "/v1/fine_tuning/jobs/:id/resume"),
  listFineTuningEvents: route()("GET", "/v1/fine_tuning/jobs/:id/events"),
  listFineTuningCheckpoints: route()("GET", "/v1/fine_tuning/jobs/:id/checkpoints"),
  runGrader: route()("POST", "/v1/fine_tuning/alpha/graders/run"),
  validateGrader: route()("POST", "/v1/fine_tuning/alpha/graders/validate"),
  createChatCompletion: route()("POST", "/v1/chat/completions"),
  /** OpenAI's Responses API (docs/api.md). */
  createResponse: route()("POST", "/v1/responses"),
} as const;

/** Which profile of a dataset to read: the base model's, counted for maxLength (default 512). */
export interface DatasetProfileOptions {
  baseModel: string;
  maxLength?: number;
}

/** What GET /v1/auth/config answers: the identity provider `svc login` signs in with. */
export interface AuthConfig {
  oidc: { issuer: string; clientId: string; audience?: string; scopes?: string[] } | null;
}

export type RouteTable = typeof ROUTES;
export type RouteName = keyof RouteTable;
export type BodyOf<R> =
  R extends Route<HttpMethod, string, infer B, unknown, unknown, string | None> ? B : never;
export type QueryOf<R> =
  R extends Route<HttpMethod, string, unknown, infer Q, unknown, string | None> ? Q : never;
/** The JSON answer of a route, as the server sends it. */
export type AnswerOf<R> =
  R extends Route<HttpMethod, string, unknown, unknown, infer A, string | None> ? A : never;
/** A table route's JSON answer by its name: what the server's handler sends (`c.json(x satisfies Answer<"getJob">)`). */
export type Answer<K extends RouteName> = AnswerOf<RouteTable[K]>;
/** What the SDK returns for a route: the unwrapped field, or the whole answer. */
export type ResultOf<R> =
  R extends Route<HttpMethod, string, unknown, unknown, infer A, infer U>
    ? U extends keyof A
      ? A[U]
      : A
    : never;

/** The `:name` segments of a path, in order, one string each. */
export type PathParams<P extends string> = P extends `${string}:${string}/${infer Rest}`
  ? [string, ...PathParams<Rest>]
  : P extends `${string}:${string}`
    ? [string]
    : [];

/**
 * The path with its `:name` segments filled in order (each percent-encoded),
 * or an error naming the route when the count differs.
 */
export function fillPath(route: Route, params: readonly string[]): string {
  let i = 0;
  const path = route.path.replace(/:[A-Za-z]+(\{[^}]*\})?/g, () => {
    const value = params[i++];
    if (value === undefined) throw new Error(`${route.method} ${route.path}: ${i} path parameters missing`);
    return encodeURIComponent(value);
  });
  if (i !== params.length)
    throw new Error(`${route.method} ${route.path} takes ${i} path parameters, not ${params.length}`);
  return path;
}
