// A stored profile row as the API shows it for one maxLength: the engine's
// profile plus what follows from maxLength and the model's context (rows over
// it, the suggested maxLength, the histogram).
import {
  type DatasetProfile as EngineProfile,
  lengthHistogram,
  rowsOverMaxLength,
  suggestMaxLength,
} from "@svc/engine";
import type { DatasetProfile } from "@svc/wire";
import type { DatasetProfileRow } from "../store/dataset-profile-store.js";

export function toDatasetProfile(
  row: DatasetProfileRow,
  options: { maxLength: number; contextLength: number },
): DatasetProfile {
  const base = { datasetId: row.dataset_id, baseModel: row.base_model, maxLength: options.maxLength };
  if (row.status === "pending")
    return { ...base, status: "pending", progress: Math.min(1, Math.max(0, Number(row.progress))) };
  if (row.status === "failed" || row.profile === null)
    return { ...base, status: "failed", error: row.error ?? "the profile could not be computed" };
  const profile = JSON.parse(row.profile) as EngineProfile;
  return {
    ...base,
    status: "ready",
    rows: profile.rows,
    tokens: profile.tokens,
    overMaxLength: rowsOverMaxLength(profile, options.maxLength),
    roles: profile.roles,
    turns: profile.turns,
    duplicates: profile.duplicates,
    longest: profile.longest,
    suggestedMaxLength: suggestMaxLength(profile, options.contextLength),
    histogram: lengthHistogram(profile, options.maxLength),
    computedAt: row.updated_at,
  };
}
