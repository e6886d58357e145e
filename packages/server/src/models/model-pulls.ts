// Model pulls: the server downloading a Hub model into its Hugging Face cache
// on request (POST /v1/models/pull), or because the Playground or a deployment
// asked for one that is not cached yet (docs/hub.md#serving-a-hub-model). One
// pull per model name runs at a time, and at most MAX_RUNNING_PULLS in all
// (each holds a download's sockets, disk writes and memory); its download is
// ensureSnapshot's, shared with jobs that need the same repo and revision. Records live in this process
// (the cache is on its machine): the running ones, and the last finished ones
// for an hour. A model whose architecture the engine does not implement is
// pulled for the torch backend's transformers + peft when asked for by name,
// never for serving (transformers-only-model.ts).
import { dirname } from "node:path";
import { isEngineError, machineMemoryBytes, readModelConfig } from "@svc/engine";
import type { ModelPull } from "@svc/wire";
import { ApiError, badRequest } from "../http/api-error.js";
import { HubError, type HubProgress, hubEndpoint, hubName, parseHubName } from "../hub/index.js";
import { nowIso, uuidv7 } from "../ids.js";
import type { HubModels } from "./hub-models.js";
import { estimateServingMemory, formatBytes } from "./memory-estimate.js";
import {
  engineImplements,
  readRawConfig,
  readTransformersOnlyModel,
  TRANSFORMERS_FALLBACK_DOCS,
  TRANSFORMERS_FALLBACK_SETTINGS,
} from "./transformers-only-model.js";

/** Why a pull was started: POST /v1/models/pull asked for the model, or a request to serve it did. */
export type PullPurpose = "download" | "serve";

/** How long a pull waits for the Hub to answer for config.json (as POST /v1/jobs does). */
const CONFIG_TIMEOUT_MS = 30_000;
/** Finished pulls are kept this long, and at most this many. */
const KEEP_FINISHED_MS = 60 * 60_000;
const KEEP_FINISHED = 200;
/** Pulls one server runs at once; another model's pull past them is 429 too_many_pulls. */
export const MAX_RUNNING_PULLS = 4;
/** A serving request within this long of a failed pull answers its error instead of starting another. */
export const RETRY_FAILED_AFTER_MS = 60_000;

export class ModelPulls {
  private readonly byId = new Map<string, ModelPull>();
  /** The newest pull of each model name (running or finished). */
  private readonly latest = new Map<string, ModelPull>();

  constructor(private readonly hub: HubModels) {}

  /**
   * The running pull of `name`, or a new one. Refusals (not a Hub id, the
   * operator's --hub-models policy) are ApiErrors naming `field`; failures of
   * the download itself end up in the record.
   */
  start(name: string, field = "model", purpose: PullPurpose = "download"): ModelPull {
    const ref = parseHubName(name);
    if (!ref)
      throw badRequest(
        `"${field}": ${JSON.stringify(name)} is not a Hub model id (<org>/<name>[@<revision>]; names in the svc org are bundled models)`,
        "invalid_request",
      );
    const key = hubName(ref);
    const running = this.latest.get(key);
    if (running?.status === "downloading") return running;
    const refusal = this.hub.refusal(key);
    if (refusal) throw badRequest(`"${field}": ${refusal}`, "hub_model_refused");
    const downloading = [...this.latest.values()].filter((p) => p.status === "downloading").length;
    if (downloading >= MAX_RUNNING_PULLS)
      throw new ApiError(
        429,
        "too_many_pulls",
        `${downloading} model pulls are already running on this server (at most ${MAX_RUNNING_PULLS}); try again when one has finished`,
      );
    const pull: ModelPull = {
      id: uuidv7(),
      model: key,
      status: "downloading",
      revision: null,
      files: [],
      bytesDone: 0,
      bytesTotal: 0,
      fromCache: null,
      error: null,
      createdAt: nowIso(),
      finishedAt: null,
    };
    this.prune();
    this.byId.set(pull.id, pull);
    this.latest.set(key, pull);
    void this.run(pull, purpose);
    return pull;
  }

  get(id: string): ModelPull | undefined {
    return this.byId.get(id);
  }

  /** The newest pull of `name` (`org/name[@revision]`), if this process has one. */
  latestOf(name: string): ModelPull | undefined {
    const ref = parseHubName(name);
    return ref ? this.latest.get(hubName(ref)) : undefined;
  }

  private async run(pull: ModelPull, purpose: PullPurpose): Promise<void> {
    try {
      const ref = parseHubName(pull.model)!;
      // Only a server that may download the model asks the Hub where its revision points now.
      const mayDownload = this.hub.policy.allowsDownload(ref.repo);
      if (mayDownload || !this.hub.cached(pull.model)) await this.checkConfig(pull, purpose);
      const snapshot = await this.hub.fetch(pull.model, {
        refresh: mayDownload,
        onProgress: (files, revision) => this.progress(pull, files, revision),
      });
      try {
        const raw = readRawConfig(snapshot.dir);
        // an architecture only transformers trains: its files must be what that needs
        if (raw && !engineImplements(raw)) readTransformersOnlyModel(snapshot.dir, raw);
        else readModelConfig(snapshot.dir);
      } catch (error) {
        throw badRequest(`Hub model ${pull.model}: ${(error as Error).message}`, "unsupported_model");
      }
      pull.revision = snapshot.revision;
      pull.files = pull.files.map((f) => ({ ...f, bytesDone: f.bytesTotal }));
      pull.bytesTotal = snapshot.bytes;
      pull.bytesDone = snapshot.bytes;
      pull.fromCache = snapshot.fromCache;
      pull.status = "completed";
    } catch (error) {
      pull.status = "failed";
      pull.error =
        error instanceof HubError || error instanceof ApiError
          ? { message: error.message, code: error.code }
          : { message: `Hub model ${pull.model}: ${(error as Error).message}`, code: "internal_error" };
    }
    pull.finishedAt = nowIso();
  }

  /** config.json alone first: an architecture the engine does not compute, or a model that cannot fit, fails before any weight is fetched. */
  private async checkConfig(pull: ModelPull, purpose: PullPurpose): Promise<void> {
    const timeout = AbortSignal.timeout(CONFIG_TIMEOUT_MS);
    let config: Awaited<ReturnType<HubModels["config"]>>["config"];
    try {
      config = (await this.hub.config(pull.model, timeout)).config;
    } catch (error) {
      const raw = isEngineError(error) && error.file ? readRawConfig(dirname(error.file)) : null;
      if (raw && !engineImplements(raw)) {
        // Never served; its training memory is checked when a job names it (POST /v1/jobs).
        if (purpose === "download") return;
        throw badRequest(
          `Hub model ${pull.model}: its architecture (${String((raw.architectures as unknown[] | undefined)?.[0] ?? raw.model_type)}) is one svc's engine does not implement, so it cannot be served; it trains with transformers + peft on a torch worker (${TRANSFORMERS_FALLBACK_SETTINGS}, ${TRANSFORMERS_FALLBACK_DOCS}) once POST /v1/models/pull has downloaded it`,
          "unsupported_architecture",
        );
      }
      if (timeout.aborted)
        throw new HubError(
          `the Hub at ${hubEndpoint()} did not answer for ${pull.model}'s config.json within ${CONFIG_TIMEOUT_MS / 1000} s (HF_ENDPOINT sets the Hub's address)`,
          "hub_unreachable",
        );
      if (error instanceof HubError) throw error;
      throw badRequest(`Hub model ${pull.model}: ${(error as Error).message}`, "unsupported_model");
    }
    const needed = estimateServingMemory(config);
    const available = machineMemoryBytes();
    if (needed.totalBytes > available)
      throw badRequest(
        `${pull.model} needs about ${formatBytes(needed.totalBytes)} to load (${formatBytes(needed.weightBytes)} of F32 weights) and this machine has ${formatBytes(available)}: choose a smaller model (docs/hub.md#memory)`,
        "model_too_large",
      );
  }

  private progress(pull: ModelPull, files: HubProgress[], revision: string): void {
    pull.revision = revision;
    pull.files = files.map((f) => ({ name: f.file, bytesDone: f.bytesDone, bytesTotal: f.bytesTotal }));
    pull.bytesDone = files.reduce((sum, f) => sum + f.bytesDone, 0);
    pull.bytesTotal = files.reduce((sum, f) => sum + f.bytesTotal, 0);
  }

  /** Forgets finished pulls older than KEEP_FINISHED_MS, and the oldest past KEEP_FINISHED. */
  private prune(): void {
    const finished = [...this.byId.values()].filter((p) => p.finishedAt !== null);
    const cutoff = Date.now() - KEEP_FINISHED_MS;
    finished.forEach((pull, i) => {
      if (Date.parse(pull.finishedAt!) >= cutoff && finished.length - i <= KEEP_FINISHED) return;
      this.byId.delete(pull.id);
      if (this.latest.get(pull.model) === pull) this.latest.delete(pull.model);
    });
  }
}
