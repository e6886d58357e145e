// The dataset profile on the wire: GET /v1/datasets/:id/profile?baseModel=&maxLength=,
// and the `profile` that POST /v1/datasets?baseModel= answers with.
// A profile belongs to a (dataset, base model) pair: token counts depend on the
// model's tokenizer and chat template. It is computed once, in the background,
// and kept; maxLength only changes the counts derived from it (docs/datasets.md#profile).

type Iso8601 = string;

/** The maxLength a profile is read for when the request names none: the engine's default. */
export const DEFAULT_PROFILE_MAX_LENGTH = 512;

export interface TokenLengths {
  /** Nearest-rank percentiles: the length of a real row. */
  p50: number;
  p95: number;
  max: number;
  mean: number;
}

/** Rows whose length in tokens is in [from, to); `to` null: from and longer. */
export interface DatasetProfileBin {
  from: number;
  to: number | null;
  rows: number;
}

interface DatasetProfileBase {
  datasetId: string;
  baseModel: string;
  /** The maxLength the counts are for (the request's, default DEFAULT_PROFILE_MAX_LENGTH). */
  maxLength: number;
}

export interface PendingDatasetProfile extends DatasetProfileBase {
  status: "pending";
  /** Share of the rows measured so far, 0 to 1. */
  progress: number;
}

export interface FailedDatasetProfile extends DatasetProfileBase {
  status: "failed";
  error: string;
}

export interface ReadyDatasetProfile extends DatasetProfileBase {
  status: "ready";
  rows: number;
  /** Tokens per row as training renders and labels it: answer = trained (assistant) tokens, prompt = the rest. */
  tokens: { prompt: TokenLengths; answer: TokenLengths; total: TokenLengths; sum: number };
  /** Rows longer than maxLength: training cuts them on the prompt side, or drops those whose answer cannot fit. */
  overMaxLength: number;
  /** Messages per role over all rows. */
  roles: { system: number; user: number; assistant: number; tool: number };
  /** Rows per number of assistant messages, e.g. { "1": 950, "2": 50 }. */
  turns: Record<string, number>;
  /** Rows that repeat an earlier row exactly; `first` lists up to 10 (1-based rows). */
  duplicates: { rows: number; groups: number; first: { row: number; duplicateOf: number }[] };
  /** The 5 longest rows, longest first. */
  longest: { row: number; tokens: number; promptTokens: number; answerTokens: number }[];
  /** The smallest multiple of 64 that holds 95% of rows in full and every answer, capped by the model's context. */
  suggestedMaxLength: { maxLength: number; rowsOver: number; cappedAtContext: boolean };
  /** Row lengths in power-of-two bins; outliers past max(maxLength, 2 × p95) share one open-ended last bin. */
  histogram: DatasetProfileBin[];
  computedAt: Iso8601;
}

export type DatasetProfile = PendingDatasetProfile | FailedDatasetProfile | ReadyDatasetProfile;

/** What an upload (POST /v1/datasets: query parameters, or fields of the JSON body) may add to start the profile. */
export interface DatasetProfileRequest {
  /** Profile the dataset for this base model's tokenizer; the answer then carries `profile`. */
  baseModel?: string;
  /** The maxLength the profile's counts are read for (default DEFAULT_PROFILE_MAX_LENGTH). */
  maxLength?: number;
}
