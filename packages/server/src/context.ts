// What every route module needs, built once by startServer.
import type { HttpBindings } from "@hono/node-server";
import type { JobLimits } from "@svc/wire";
import type { OidcVerifier } from "./auth/oidc.js";
import type { DataDir } from "./data-dir.js";
import type { UpstreamRegistry } from "./edge/upstreams.js";
import type { JobEventHub } from "./events/job-event-hub.js";
import type { EventStreamCaps } from "./events/stream-caps.js";
import type { RateLimiters } from "./http/rate-limit.js";
import type { InferenceService } from "./inference/inference-service.js";
import type { ModelRegistry } from "./models/model-registry.js";
import type { DatasetProfiler } from "./profiles/dataset-profiler.js";
import type { UserRow } from "./store/identity-store.js";
import type { Store } from "./store/store.js";

export interface ServerContext {
  store: Store;
  dataDir: DataDir;
  models: ModelRegistry;
  events: JobEventHub;
  inference: InferenceService;
  /** Computes dataset profiles in the background (child processes). */
  profiler: DatasetProfiler;
  oidc: OidcVerifier | null;
  /** The external inference servers the operator declared (--upstream). */
  upstreams: UpstreamRegistry;
  /** e.g. "localhost:4200": deployment URLs are http://<slug>.<domain>/v1/chat/completions. */
  deploymentDomain: string;
  maxDatasetBytes: number;
  /** Hosts a dataset URL may name even though they resolve to a private address (--dataset-url-allow). */
  datasetUrlAllow: readonly string[];
  /** The API's and the edge's own ports: a dataset URL never reaches them on this machine. */
  ownPorts: readonly number[];
  /** Upper bounds of job hyperparameters (--max-job-steps, --max-batch-size). */
  jobLimits: JobLimits;
  sseKeepAliveMs: number;
  /** Event streams open per identity and per job, and each one's buffer limit (svc server --event-stream*). */
  eventStreams: EventStreamCaps;
  /** Request rate limits per key, identity and client address (--rate-limit-*). */
  rateLimiters: RateLimiters;
  /** Wakes the in-process worker after a job is queued. */
  wakeWorkers: () => void;
  /** Aborts a job running in this process right away (others poll their cancel flag). */
  cancelRunning: (jobId: string) => void;
  /** Pauses a job running in this process right away: it checkpoints and stops (others poll their pause flag). */
  pauseRunning: (jobId: string) => void;
}

/** Routes run on @hono/node-server: `c.env.outgoing` is the Node response (the event stream writes to it directly). */
export type ApiEnv = { Bindings: HttpBindings; Variables: { user: UserRow } };
