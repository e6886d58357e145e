// startServer: the cloud API and the edge on two listeners over one store,
// with the in-process job runner, lease recovery and graceful shutdown.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { WeightFormat } from "@svc/engine";
import { DEFAULT_JOB_LIMITS, type JobLimits } from "@svc/wire";
import { createApiApp } from "./api-app.js";
import { type OidcConfig, OidcVerifier } from "./auth/oidc.js";
import type { ServerContext } from "./context.js";
import { DataDir, DEFAULT_DATA_DIR, ORPHAN_GRACE_MS } from "./data-dir.js";
import { openDatabase } from "./db/connect.js";
import { watchSqliteChanges } from "./db/sqlite-changes.js";
import { DeploymentDirectory } from "./edge/deployment-directory.js";
import { createEdgeApp } from "./edge/edge-app.js";
import { KeyUsageRecorder } from "./edge/key-usage-recorder.js";
import { type Upstream, UpstreamRegistry } from "./edge/upstreams.js";
import { BackgroundTurns } from "./events/background-turns.js";
import { JobEventHub } from "./events/job-event-hub.js";
import { PgNotifications } from "./events/pg-notifications.js";
import { admitEventStreamsInTurn } from "./events/stream-admission.js";
import {
  DEFAULT_EVENT_STREAM_LIMITS,
  EventStreamCaps,
  type EventStreamLimits,
} from "./events/stream-caps.js";
import { RateLimiters, type RateLimits } from "./http/rate-limit.js";
import { InferenceService } from "./inference/inference-service.js";
import type { HubModelPolicy } from "./models/hub-policy.js";
import { ModelRegistry } from "./models/model-registry.js";
import { DatasetProfiler } from "./profiles/dataset-profiler.js";
import { Store } from "./store/store.js";
import { JOB_RUNNER_DEFAULTS, JobRunner } from "./worker/job-runner.js";
import { LeaseSweeper } from "./worker/lease-sweeper.js";

export interface ServerOptions {
  host?: string;
  port?: number;
  edgePort?: number;
  /** Default: localhost:<edge port>. */
  deploymentDomain?: string;
  dataDir?: string;
  databaseUrl?: string | null;
  models?: { name: string; dir: string }[];
  /** The folder of bundled models (default: the repository's models/); null for none. */
  bundledModelsDir?: string | null;
  /** Which Hub models jobs may use (svc server --hub-models); default: those already cached. */
  hubModels?: HubModelPolicy;
  oidc?: OidcConfig | null;
  /** External OpenAI-compatible servers deployments may forward to (see edge/upstreams.ts). */
  upstreams?: Upstream[];
  /** The weight format of deployments that name none (svc server --weights); default fp32. */
  weightFormat?: WeightFormat;
  /** In-process training workers (0: jobs wait for `svc worker` processes). */
  workers?: number;
  jobLeaseMs?: number;
  jobPollMs?: number;
  /** Request rate limits; default DEFAULT_RATE_LIMITS. */
  rateLimits?: RateLimits;
  /** Crash-restart policy of training processes (see JobRunnerOptions). */
  jobCrashRestarts?: number;
  jobRestartWithoutCheckpoint?: boolean;
  sseKeepAliveMs?: number;
  /** Caps on concurrent event streams and their buffer limit; default DEFAULT_EVENT_STREAM_LIMITS. */
  eventStreams?: Partial<EventStreamLimits>;
  maxDatasetBytes?: number;
  /** Hosts a dataset URL may name although they resolve to a loopback or private address. */
  datasetUrlAllow?: string[];
  /** Upper bounds of hyperparameters.maxSteps (and every step count) and batchSize. */
  jobLimits?: Partial<JobLimits>;
  /** How long the edge may reuse a deployment or key lookup (every change clears it at once). */
  edgeCacheMs?: number;
}

export interface ServerHandle {
  apiUrl: string;
  edgeUrl: string;
  deploymentDomain: string;
  dataDir: string;
  database: string;
  close(): Promise<void>;
}

export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(
      `port ${port} on ${host} is already in use (is another svc server running? choose another with --port/--edge-port)`,
    );
    this.name = "PortInUseError";
  }
}

type NodeServer = Server;

/**
 * The kernel's queue of connections waiting to be accepted (capped by
 * net.core.somaxconn, 4096 on current Linux). Node's default, 511, overflows
 * when more clients than that connect at once (2,000 event streams): the
 * kernel then drops their SYNs, and whoever connects next, a /healthz
 * included, waits the client's 1 s SYN retry. Queued, it waits only for
 * the connections ahead of it to be accepted (events/background-turns.ts).
 */
const LISTEN_BACKLOG = 4096;

function listen(server: NodeServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(error.code === "EADDRINUSE" ? new PortInUseError(host, port) : error);
    };
    server.once("error", onError);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off("error", onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function shut(server: NodeServer): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export const DEFAULTS = {
  host: "127.0.0.1",
  port: 4100,
  edgePort: 4200,
  // Heartbeats every third of it; a dead worker's job is re-queued within a lease and a half.
  jobLeaseMs: 10_000,
  jobPollMs: 1000,
  sseKeepAliveMs: 15_000,
  maxDatasetBytes: 64 * 1024 * 1024,
  edgeCacheMs: 2000,
};

/** Files a crash left in datasets/ without a row (see DataDir.sweepDatasets). */
async function sweepOrphanDatasets(store: Store, dataDir: DataDir, database: string): Promise<void> {
  const removed = dataDir.sweepDatasets(await store.datasets.allPaths(), database, ORPHAN_GRACE_MS);
  if (removed === null)
    console.warn(
      `svc server: not sweeping ${dataDir.abs("datasets")}: its files belong to another database than ${database}`,
    );
  else if (removed.length > 0)
    console.log(`svc server: removed ${removed.length} dataset file(s) no dataset references`);
}

export async function startServer(options: ServerOptions = {}): Promise<ServerHandle> {
  const host = options.host ?? DEFAULTS.host;
  const dataDir = new DataDir(options.dataDir ?? DEFAULT_DATA_DIR);
  const models = new ModelRegistry({
    bundledDir: options.bundledModelsDir,
    extra: options.models,
    hubPolicy: options.hubModels,
  });
  const opened = await openDatabase({ databaseUrl: options.databaseUrl, sqlitePath: dataDir.sqlitePath });
  const store = new Store(opened);
  // The event streams' background work yields to accepting connections on either listener.
  const turns = new BackgroundTurns();
  const events = new JobEventHub(store.jobs, {}, turns);
  const directory = new DeploymentDirectory(store.deployments, options.edgeCacheMs ?? DEFAULTS.edgeCacheMs);
  store.deployments.onChanged = () => directory.invalidate();
  let notifications: PgNotifications | null = null;
  let stopWatchingSqlite: (() => void) | null = null;
  const leaseMs = options.jobLeaseMs ?? DEFAULTS.jobLeaseMs;
  // One crash policy for the training processes this server runs and for the jobs its sweeper recovers.
  const crashPolicy = {
    crashRestarts: options.jobCrashRestarts ?? JOB_RUNNER_DEFAULTS.crashRestarts,
    restartWithoutCheckpoint:
      options.jobRestartWithoutCheckpoint ?? JOB_RUNNER_DEFAULTS.restartWithoutCheckpoint,
  };
  const runner = new JobRunner(store, dataDir, models, {
    concurrency: options.workers ?? 1,
    leaseMs,
    pollMs: options.jobPollMs ?? DEFAULTS.jobPollMs,
    ...crashPolicy,
    stopTimeoutMs: JOB_RUNNER_DEFAULTS.stopTimeoutMs,
  });
  const sweeper = new LeaseSweeper(store, Math.max(100, Math.floor(leaseMs / 2)), crashPolicy);
  // Bound before the apps exist (the edge port decides the default deployment domain).
  const apiServer = createServer();
  const edgeServer = createServer();
  turns.watch(apiServer);
  turns.watch(edgeServer);
  const inference = new InferenceService(store, models, dataDir, options.weightFormat);
  const profiler = new DatasetProfiler(store, dataDir);
  const cleanup = async () => {
    stopWatchingSqlite?.();
    await Promise.all([shut(apiServer), shut(edgeServer)]);
    await inference.close();
    await profiler.close();
    await notifications?.close();
    await store.close();
  };
  try {
    if (opened.url) {
      notifications = await PgNotifications.listen(
        opened.url,
        { svc_job_events: (jobId) => events.signal(jobId), svc_deployments: () => directory.invalidate() },
        () => {
          directory.invalidate();
          events.signalAll();
        },
      );
    }
    // A `svc worker` on the same SQLite file (docs/gpu-training.md) appends events there.
    if (opened.sqlite)
      stopWatchingSqlite = watchSqliteChanges(opened.sqlite, 200, () => {
        directory.invalidate();
        events.signalAll();
      });
    await sweepOrphanDatasets(store, dataDir, opened.url ? opened.location : "sqlite svc.db");
    const apiPort = await listen(apiServer, host, options.port ?? DEFAULTS.port);
    const edgePort = await listen(edgeServer, host, options.edgePort ?? DEFAULTS.edgePort);
    const ctx: ServerContext = {
      store,
      dataDir,
      models,
      events,
      inference,
      profiler,
      oidc: options.oidc ? new OidcVerifier(options.oidc) : null,
      upstreams: new UpstreamRegistry(options.upstreams ?? []),
      deploymentDomain: options.deploymentDomain ?? `localhost:${edgePort}`,
      maxDatasetBytes: options.maxDatasetBytes ?? DEFAULTS.maxDatasetBytes,
      datasetUrlAllow: options.datasetUrlAllow ?? [],
      ownPorts: [apiPort, edgePort],
      jobLimits: { ...DEFAULT_JOB_LIMITS, ...options.jobLimits },
      sseKeepAliveMs: options.sseKeepAliveMs ?? DEFAULTS.sseKeepAliveMs,
      eventStreams: new EventStreamCaps({ ...DEFAULT_EVENT_STREAM_LIMITS, ...options.eventStreams }),
      rateLimiters: new RateLimiters(options.rateLimits),
      wakeWorkers: () => runner.nudge(),
      cancelRunning: (jobId) => runner.cancel(jobId),
      pauseRunning: (jobId) => runner.pause(jobId),
    };
    const usage = new KeyUsageRecorder(store.deployments, store.keyUsage);
    const apiApp = createApiApp(ctx);
    const edgeApp = createEdgeApp(ctx, directory, usage);
    apiServer.on("request", admitEventStreamsInTurn(getRequestListener(apiApp.fetch), turns));
    edgeServer.on("request", getRequestListener(edgeApp.fetch));
    await sweeper.start();
    if ((options.workers ?? 1) > 0) runner.start();
    const urlHost = host.includes(":") ? `[${host}]` : host;
    let closing: Promise<void> | null = null;
    return {
      apiUrl: `http://${urlHost}:${apiPort}`,
      edgeUrl: `http://${urlHost}:${edgePort}`,
      deploymentDomain: ctx.deploymentDomain,
      dataDir: dataDir.root,
      database: `${opened.kind} ${opened.location}`,
      close() {
        closing ??= (async () => {
          sweeper.stop();
          stopWatchingSqlite?.();
          const listeners = Promise.all([shut(apiServer), shut(edgeServer)]);
          await runner.stop();
          await usage.close();
          await listeners;
          await inference.close();
          await profiler.close();
          await notifications?.close();
          await store.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
