// `svc server` and `svc worker` as functions the svc CLI calls with its argv
// (the words after the subcommand). Both run in the foreground until SIGINT
// or SIGTERM and resolve to the process exit code.
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { isWeightFormat, WEIGHT_FORMATS, type WeightFormat } from "@svc/engine";
import { DEFAULT_JOB_LIMITS, MAX_STORED_INTEGER } from "@svc/wire";
import { DataDir, DEFAULT_DATA_DIR } from "./data-dir.js";
import { openDatabase } from "./db/connect.js";
import { parseUpstreams, type Upstream } from "./edge/upstreams.js";
import { DEFAULT_EVENT_STREAM_LIMITS } from "./events/stream-caps.js";
import { parseAllowedHosts } from "./http/dataset-url.js";
import { DEFAULT_RATE_LIMITS, parseRateLimit, type RateLimit } from "./http/rate-limit.js";
import { HubModelPolicy } from "./models/hub-policy.js";
import { ModelRegistry } from "./models/model-registry.js";
import { logExitReasons } from "./process/exit-reasons.js";
import { DEFAULTS, PortInUseError, type ServerOptions, startServer } from "./server.js";
import { Store } from "./store/store.js";
import { JOB_RUNNER_DEFAULTS, JobRunner } from "./worker/job-runner.js";
import { LeaseSweeper } from "./worker/lease-sweeper.js";
import { resolveTorchLaunch, TorchFlagError } from "./worker/torch-launch.js";

export const SERVER_USAGE = `usage: svc server [--host 127.0.0.1] [--port 4100] [--edge-port 4200]
                  [--deployment-domain localhost:4200] [--data-dir ~/.svc/server]
                  [--database-url postgres://...] [--model <org>/<name>=<dir>]...
                  [--hub-models <org>/<pattern>[,...]|cached|none]   (default: cached; docs/hub.md)
                  [--oidc-issuer <url> --oidc-audience <client id>] [--workers 1]
                  [--upstream <name>=<OpenAI base URL>]...   (its key: env SVC_UPSTREAM_KEY_<NAME>)
                  [--dataset-url-allow <host>[:<port>][,<host>[:<port>]]...] [--max-job-steps 100000] [--max-batch-size 256]
                  [--job-crash-restarts 3] [--no-restart-from-scratch]
                  [--rate-limit-key 600/min] [--rate-limit-identity 1200/min] [--rate-limit-signup 30/min]
                  [--event-streams-per-identity 64] [--event-streams-per-job 512] [--event-stream-buffer-bytes 1048576]
                  [--weights fp32|bf16|int8|q4_0]   (deployments' default weight format; docs/serving-formats.md)`;

export const WORKER_USAGE = `usage: svc worker [--database-url postgres://...] [--data-dir ~/.svc/server]
                  (no --database-url: the local server's SQLite file in --data-dir; docs/gpu-training.md)
                  [--model <org>/<name>=<dir>]... [--concurrency 1]
                  [--backend engine|torch] [--device cpu|cuda] [--gpus N] [--python PATH]
                  [--gradient-checkpointing] [--packing] [--fsdp]
                  [--job-crash-restarts 3] [--no-restart-from-scratch]`;

class UsageError extends Error {}

const common = {
  "data-dir": { type: "string" },
  "database-url": { type: "string" },
  model: { type: "string", multiple: true },
  "bundled-models": { type: "string" },
  "hub-models": { type: "string" },
  "job-lease-ms": { type: "string" },
  "job-poll-ms": { type: "string" },
  "job-crash-restarts": { type: "string" },
  "no-restart-from-scratch": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** The crash-restart policy of training processes from the flags both commands share. */
function crashPolicy(values: { "job-crash-restarts"?: string; "no-restart-from-scratch"?: boolean }) {
  return {
    crashRestarts: int("job-crash-restarts", values["job-crash-restarts"], JOB_RUNNER_DEFAULTS.crashRestarts),
    restartWithoutCheckpoint: !values["no-restart-from-scratch"],
  };
}

function int(
  name: string,
  value: string | undefined,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be an integer from ${min} to ${max} (got ${value})`);
  return n;
}

/** --dataset-url-allow (repeatable, comma-separated) and SVC_DATASET_URL_ALLOW. */
function datasetUrlAllow(flags: string[] | undefined): string[] {
  try {
    return parseAllowedHosts([process.env.SVC_DATASET_URL_ALLOW ?? "", ...(flags ?? [])]);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function rateLimitFlag(
  name: string,
  value: string | undefined,
  fallback: RateLimit | null,
): RateLimit | null {
  if (value === undefined) return fallback;
  try {
    return parseRateLimit(name, value);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A cap on concurrent event streams: a positive integer, or off. */
function streamCapFlag(name: string, value: string | undefined, fallback: number | null): number | null {
  if (value === undefined) return fallback;
  if (value === "off") return null;
  return int(name, value, 0, 1);
}

function modelFlags(flags: string[] | undefined): { name: string; dir: string }[] {
  const env = process.env.SVC_MODELS ? process.env.SVC_MODELS.split(",").filter((s) => s.trim() !== "") : [];
  return [...env, ...(flags ?? [])].map((spec) => {
    const at = spec.indexOf("=");
    if (at <= 0 || at === spec.length - 1)
      throw new UsageError(`--model must be <org>/<name>=<dir> (got ${spec})`);
    return { name: spec.slice(0, at).trim(), dir: spec.slice(at + 1).trim() };
  });
}

function upstreamFlags(flags: string[] | undefined): Upstream[] {
  try {
    return parseUpstreams(flags ?? []);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** --hub-models (or SVC_HUB_MODELS): which Hub models jobs may use. */
function hubPolicy(value: string | undefined): HubModelPolicy {
  const text = value ?? process.env.SVC_HUB_MODELS;
  if (text === undefined) return new HubModelPolicy();
  try {
    return HubModelPolicy.parse(text);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** --weights (or SVC_WEIGHTS): the weight format of deployments that name none. */
function weightsFlag(value: string | undefined): WeightFormat {
  const format = value ?? process.env.SVC_WEIGHTS ?? "fp32";
  if (!isWeightFormat(format))
    throw new UsageError(
      `--weights must be one of ${WEIGHT_FORMATS.join(", ")} (got ${JSON.stringify(format)})`,
    );
  return format;
}

const bundled = (value: string | undefined) =>
  value === undefined ? undefined : value === "none" ? null : value;

export function parseServerArgs(argv: string[]): ServerOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      ...common,
      host: { type: "string" },
      port: { type: "string" },
      "edge-port": { type: "string" },
      "deployment-domain": { type: "string" },
      "oidc-issuer": { type: "string" },
      "oidc-audience": { type: "string" },
      workers: { type: "string" },
      "sse-keepalive-ms": { type: "string" },
      "max-dataset-bytes": { type: "string" },
      "edge-cache-ms": { type: "string" },
      upstream: { type: "string", multiple: true },
      "rate-limit-key": { type: "string" },
      "rate-limit-identity": { type: "string" },
      "rate-limit-signup": { type: "string" },
      "event-streams-per-identity": { type: "string" },
      "event-streams-per-job": { type: "string" },
      "event-stream-buffer-bytes": { type: "string" },
      "dataset-url-allow": { type: "string", multiple: true },
      "max-job-steps": { type: "string" },
      "max-batch-size": { type: "string" },
      weights: { type: "string" },
    },
  });
  if (values.help) return "help";
  const issuer = values["oidc-issuer"] ?? process.env.SVC_OIDC_ISSUER;
  const audience = values["oidc-audience"] ?? process.env.SVC_OIDC_AUDIENCE;
  if (Boolean(issuer) !== Boolean(audience))
    throw new UsageError("--oidc-issuer and --oidc-audience go together");
  return {
    host: values.host ?? DEFAULTS.host,
    port: int("port", values.port, DEFAULTS.port),
    edgePort: int("edge-port", values["edge-port"], DEFAULTS.edgePort),
    deploymentDomain: values["deployment-domain"],
    dataDir: values["data-dir"] ?? process.env.SVC_DATA_DIR ?? DEFAULT_DATA_DIR,
    databaseUrl: values["database-url"] ?? process.env.SVC_DATABASE_URL ?? null,
    models: modelFlags(values.model),
    bundledModelsDir: bundled(values["bundled-models"]),
    hubModels: hubPolicy(values["hub-models"]),
    oidc: issuer && audience ? { issuer, audience } : null,
    upstreams: upstreamFlags(values.upstream),
    weightFormat: weightsFlag(values.weights),
    workers: int("workers", values.workers, 1),
    jobLeaseMs: int("job-lease-ms", values["job-lease-ms"], DEFAULTS.jobLeaseMs, 100),
    jobPollMs: int("job-poll-ms", values["job-poll-ms"], DEFAULTS.jobPollMs, 10),
    jobCrashRestarts: crashPolicy(values).crashRestarts,
    jobRestartWithoutCheckpoint: crashPolicy(values).restartWithoutCheckpoint,
    sseKeepAliveMs: int("sse-keepalive-ms", values["sse-keepalive-ms"], DEFAULTS.sseKeepAliveMs, 10),
    maxDatasetBytes: int("max-dataset-bytes", values["max-dataset-bytes"], DEFAULTS.maxDatasetBytes, 1),
    edgeCacheMs: int("edge-cache-ms", values["edge-cache-ms"], DEFAULTS.edgeCacheMs),
    rateLimits: {
      key: rateLimitFlag("rate-limit-key", values["rate-limit-key"], DEFAULT_RATE_LIMITS.key),
      identity: rateLimitFlag(
        "rate-limit-identity",
        values["rate-limit-identity"],
        DEFAULT_RATE_LIMITS.identity,
      ),
      signup: rateLimitFlag("rate-limit-signup", values["rate-limit-signup"], DEFAULT_RATE_LIMITS.signup),
    },
    eventStreams: {
      perIdentity: streamCapFlag(
        "event-streams-per-identity",
        values["event-streams-per-identity"],
        DEFAULT_EVENT_STREAM_LIMITS.perIdentity,
      ),
      perJob: streamCapFlag(
        "event-streams-per-job",
        values["event-streams-per-job"],
        DEFAULT_EVENT_STREAM_LIMITS.perJob,
      ),
      bufferBytes: int(
        "event-stream-buffer-bytes",
        values["event-stream-buffer-bytes"],
        DEFAULT_EVENT_STREAM_LIMITS.bufferBytes,
        65_536,
      ),
    },
    datasetUrlAllow: datasetUrlAllow(values["dataset-url-allow"]),
    jobLimits: {
      maxSteps: int(
        "max-job-steps",
        values["max-job-steps"],
        DEFAULT_JOB_LIMITS.maxSteps,
        1,
        MAX_STORED_INTEGER,
      ),
      batchSize: int("max-batch-size", values["max-batch-size"], DEFAULT_JOB_LIMITS.batchSize, 1),
    },
  };
}

/** Resolves with the first stop signal: Ctrl-C, a service manager's SIGTERM, or a closed terminal's SIGHUP. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
      process.once(signal, () => resolve(signal));
  });
}

function usageFailure(error: unknown, usage: string): number | null {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    console.error(`svc: ${(error as Error).message}\n${usage}`);
    return 2;
  }
  return null;
}

export async function runServerCommand(argv: string[]): Promise<number> {
  let options: ServerOptions | "help";
  try {
    options = parseServerArgs(argv);
  } catch (error) {
    const code = usageFailure(error, SERVER_USAGE);
    if (code !== null) return code;
    throw error;
  }
  if (options === "help") {
    console.log(SERVER_USAGE);
    return 0;
  }
  let handle: Awaited<ReturnType<typeof startServer>>;
  try {
    handle = await startServer(options);
  } catch (error) {
    if (error instanceof PortInUseError) {
      console.error(`svc server: ${error.message}`);
      return 2;
    }
    console.error(`svc server: could not start: ${(error as Error).message}`);
    return 1;
  }
  // From here on every exit is logged with its reason (a failed start printed its own line).
  logExitReasons("svc server");
  // Listening before the ready line: whoever reads it may signal at once.
  const stopSignal = untilSignal();
  console.log(`svc server: cloud API on ${handle.apiUrl}`);
  console.log(
    `svc server: edge on ${handle.edgeUrl} (deployments at http://<slug>.${handle.deploymentDomain}/v1)`,
  );
  console.log(`svc server: data in ${handle.dataDir}, database ${handle.database}`);
  console.log(
    `svc-server-ready ${JSON.stringify({ apiUrl: handle.apiUrl, edgeUrl: handle.edgeUrl, deploymentDomain: handle.deploymentDomain, pid: process.pid })}`,
  );
  const signal = await stopSignal;
  console.log(`svc server: ${signal}, stopping (running jobs checkpoint and go back to the queue)`);
  await handle.close();
  console.log("svc server: stopped");
  return 0;
}

/** --backend and the torch backend's flags of `svc worker` (docs/gpu-training.md). */
function workerBackend(
  values: {
    backend?: string;
    device?: string;
    gpus?: string;
    python?: string;
    "gradient-checkpointing"?: boolean;
    packing?: boolean;
    fsdp?: boolean;
  },
  concurrency: number,
) {
  const backend = values.backend ?? "engine";
  if (backend !== "engine" && backend !== "torch")
    throw new UsageError(`--backend must be engine or torch (got ${JSON.stringify(backend)})`);
  if (backend === "engine") {
    for (const flag of ["device", "gpus", "python", "gradient-checkpointing", "packing", "fsdp"] as const)
      if (values[flag] !== undefined) throw new UsageError(`--${flag} applies to --backend torch only`);
    return { backend } as const;
  }
  try {
    const torch = resolveTorchLaunch({
      device: values.device,
      gpus: values.gpus,
      python: values.python,
      gradientCheckpointing: values["gradient-checkpointing"],
      packing: values.packing,
      fsdp: values.fsdp,
      concurrency,
    });
    return { backend, torch } as const;
  } catch (error) {
    if (error instanceof TorchFlagError) throw new UsageError(error.message);
    throw error;
  }
}

export async function runWorkerCommand(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseWorker>;
  function parseWorker(args: string[]) {
    return parseArgs({
      args,
      strict: true,
      options: {
        ...common,
        concurrency: { type: "string" },
        backend: { type: "string" },
        device: { type: "string" },
        gpus: { type: "string" },
        python: { type: "string" },
        "gradient-checkpointing": { type: "boolean" },
        packing: { type: "boolean" },
        fsdp: { type: "boolean" },
      },
    }).values;
  }
  let store: Store;
  let runner: JobRunner;
  let sweeper: LeaseSweeper;
  try {
    values = parseWorker(argv);
    if (values.help) {
      console.log(WORKER_USAGE);
      return 0;
    }
    // No URL: the SQLite file of the `svc server` on this machine with the same --data-dir.
    const databaseUrl = values["database-url"] ?? process.env.SVC_DATABASE_URL ?? null;
    const dataDir = new DataDir(values["data-dir"] ?? process.env.SVC_DATA_DIR ?? DEFAULT_DATA_DIR);
    // A worker that made its own empty database would wait for jobs no server ever queues there.
    if (!databaseUrl && !existsSync(dataDir.sqlitePath))
      throw new UsageError(
        `no svc server database in ${dataDir.root} (${dataDir.sqlitePath} does not exist): start \`svc server\` with this --data-dir first, or give --database-url postgres://... for a server on PostgreSQL`,
      );
    const models = new ModelRegistry({
      bundledDir: bundled(values["bundled-models"]),
      extra: modelFlags(values.model),
      hubPolicy: hubPolicy(values["hub-models"]),
    });
    const leaseMs = int("job-lease-ms", values["job-lease-ms"], DEFAULTS.jobLeaseMs, 100);
    store = new Store(await openDatabase({ databaseUrl, sqlitePath: dataDir.sqlitePath }));
    runner = new JobRunner(store, dataDir, models, {
      concurrency: int("concurrency", values.concurrency, 1, 1),
      leaseMs,
      pollMs: int("job-poll-ms", values["job-poll-ms"], DEFAULTS.jobPollMs, 10),
      ...crashPolicy(values),
      stopTimeoutMs: JOB_RUNNER_DEFAULTS.stopTimeoutMs,
      ...workerBackend(values, int("concurrency", values.concurrency, 1, 1)),
    });
    sweeper = new LeaseSweeper(store, Math.max(100, Math.floor(leaseMs / 2)), crashPolicy(values));
  } catch (error) {
    const code = usageFailure(error, WORKER_USAGE);
    if (code !== null) return code;
    console.error(`svc worker: could not start: ${(error as Error).message}`);
    return 1;
  }
  logExitReasons("svc worker");
  await sweeper.start();
  runner.start();
  console.log(
    `svc worker: ${runner.owner} claiming ${runner.backendName} jobs from ${store.opened.location}`,
  );
  // Listening before the ready line: whoever reads it may signal at once.
  const stopSignal = untilSignal();
  console.log(`svc-worker-ready ${JSON.stringify({ owner: runner.owner, pid: process.pid })}`);
  const signal = await stopSignal;
  console.log(`svc worker: ${signal}, stopping (running jobs checkpoint and go back to the queue)`);
  sweeper.stop();
  await runner.stop();
  await store.close();
  return 0;
}
