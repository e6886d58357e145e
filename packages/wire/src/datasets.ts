// Wire types of datasets (/v1/datasets).

import type { Iso8601 } from "./common.js";
import type { DatasetProfileRequest } from "./dataset-profiles.js";

export interface Dataset {
  id: string;
  projectId: string;
  name: string;
  rows: number;
  bytes: number;
  createdAt: Iso8601;
}

/**
 * POST /v1/datasets: the JSONL text as the body (Content-Type application/x-ndjson,
 * ?name=&baseModel=&maxLength=), or JSON { url, token?, name?, baseModel?, maxLength? }.
 * Answers { dataset, profile? }: `profile` when a base model was named (dataset-profiles.ts).
 */
export interface CreateDatasetFromUrlRequest extends DatasetProfileRequest {
  url: string;
  token?: string;
  name?: string;
}

/** A Hugging Face Hub dataset split (docs/hub.md#datasets). */
export interface HubDatasetRequest {
  /** The dataset's Hub id, `org/name`. */
  name: string;
  split: string;
  /** A config: a top-level folder of the dataset's files. */
  config?: string;
  /** Branch, tag or commit sha; "main" when left out. */
  revision?: string;
  /** Which columns make the rows, when they are not named messages, prompt/completion or instruction/input/output. */
  columns?: HubColumnMapping;
}

/** An explicit mapping: the row shape's fields, each naming a column of the dataset. */
export interface HubColumnMapping {
  messages?: string;
  prompt?: string;
  completion?: string;
  instruction?: string;
  input?: string;
  output?: string;
  system?: string;
}

/**
 * POST /v1/datasets with JSON { huggingface, name?, baseModel?, maxLength? }:
 * the split is fetched into the Hugging Face cache, converted and checked like
 * an upload. Answers { dataset, source, profile? }.
 */
export interface CreateDatasetFromHubRequest extends DatasetProfileRequest {
  huggingface: HubDatasetRequest;
  name?: string;
}

/** Where a Hub dataset's rows came from: the answer's `source`. */
export interface HubDatasetSource {
  type: "huggingface";
  name: string;
  split: string;
  config: string | null;
  /** The commit sha the files were read at. */
  revision: string;
  /** The split's files, in the order their rows were read. */
  files: string[];
  shape: "messages" | "prompt_completion" | "alpaca";
  /** The shape's fields and the columns they were read from. */
  columns: Record<string, string>;
  /** Columns of the files no row was made from (ids, metadata, ...). */
  ignoredColumns: string[];
  /** True when no file had to be fetched. */
  fromCache: boolean;
}
