// The contract of CloudApiClient (client.ts), derived from the wire's route
// table (@svc/wire ROUTES): one method per /v1 route, named as the table names
// it. Argument order is always the path's ids from outer to inner, then the
// request body, then the query as an options object. The project scope
// (?orgSlug=&projectSlug=) comes from the client's construction, not the calls.
import type {
  BodyOf,
  None,
  PathParams,
  ProjectScope,
  QueryOf,
  ResultOf,
  RouteName,
  RouteTable,
} from "@svc/wire";
import type { CloudApiClient } from "./client.js";

export type { DatasetProfileOptions } from "@svc/wire";

/** The public methods of CloudApiClient: the route table's and the hand-written ones. */
export type CloudApi = Omit<CloudApiClient, "baseUrl" | "token" | "scope" | "with" | "call" | "request">;

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

// a query whose every field is optional may be left out
type QueryArgs<Q> = [Q] extends [None] ? [] : Partial<Q> extends Q ? [options?: Q] : [options: Q];
type BodyArgs<B> = [B] extends [None] ? [] : [body: B];

/** A route's arguments: its path's ids, then its body, then its query. */
export type RouteArgs<K extends RouteName> = [
  ...PathParams<RouteTable[K]["path"]>,
  ...BodyArgs<BodyOf<RouteTable[K]>>,
  ...QueryArgs<QueryOf<RouteTable[K]>>,
];

/**
 * The routes whose SDK method is written by hand in client.ts, because it is
 * more than one JSON call: a raw upload, a stream, file bytes, a fallback, or
 * an argument list kept from before the table (listProjects(orgSlug), pullModel(model)).
 */
export const HAND_WRITTEN_ROUTES = [
  "me",
  "listProjects",
  "pullModel",
  "createDataset",
  "openJobEvents",
  "downloadArtifactFile",
  "openExportFile",
  "infer",
  "revokeDeploymentKey",
] as const satisfies readonly RouteName[];

/** The routes whose SDK method is one JSON call made from the table alone. */
export type TableRouteName = Exclude<RouteName, (typeof HAND_WRITTEN_ROUTES)[number]>;

/** CloudApiClient's methods made from the route table, one per TableRouteName. */
export type TableMethods = {
  [K in TableRouteName]: (...args: RouteArgs<K>) => Promise<ResultOf<RouteTable[K]>>;
};

/**
 * The one-call rule, checked by the compiler: a table route's argument after
 * the ids is a POST's or PATCH's body or a GET's or DELETE's query, never both.
 */
type OneCallable<K extends TableRouteName> = RouteTable[K]["method"] extends "GET" | "DELETE"
  ? [BodyOf<RouteTable[K]>] extends [None]
    ? true
    : false
  : [QueryOf<RouteTable[K]>] extends [None]
    ? true
    : false;
type Every<T extends Record<string, true>> = T;
export type TableRoutesAreOneCall = Every<{ [K in TableRouteName]: OneCallable<K> }>;
