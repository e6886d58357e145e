// Wire types of model pulls (/v1/models/pull): the server downloading a Hub
// model into its Hugging Face cache, so the Playground and deployments can
// serve it.
import type { Iso8601 } from "./common.js";

/** POST /v1/models/pull → 202 { pull }: starts the download, or joins the one running for the same model. */
export interface CreateModelPullRequest {
  /** A Hub model id, `<org>/<name>[@<revision>]`. */
  model: string;
}

export interface ModelPullFile {
  name: string;
  bytesDone: number;
  bytesTotal: number;
}

/** GET /v1/models/pull/:id → { pull }: ask again while `status` is "downloading". */
export interface ModelPull {
  id: string;
  /** As asked for, `org/name` or `org/name@revision` ("@main" left out). */
  model: string;
  /** downloading (config.json first, then the weights), completed (in the cache), or failed with `error`. */
  status: "downloading" | "completed" | "failed";
  /** The commit sha being fetched, or the one cached; null until the Hub has answered. */
  revision: string | null;
  /** Every file being fetched, with its bytes; empty until the file list is known. */
  files: ModelPullFile[];
  bytesDone: number;
  bytesTotal: number;
  /** Completed: true when every file was already in the cache. Null before then. */
  fromCache: boolean | null;
  /** Failed: the reason, with a code such as hub_gated, hub_offline, hub_not_found, hub_unreachable, hub_cache, model_too_large, unsupported_model. */
  error: { message: string; code: string } | null;
  createdAt: Iso8601;
  finishedAt: Iso8601 | null;
}
