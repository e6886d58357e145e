// Waiting for a dataset's profile (GET /v1/datasets/:id/profile): the server
// computes it in the background and answers "pending" with its progress until
// it is ready or failed.
import type { DatasetProfile, DatasetProfileRequest } from "@svc/wire";
import type { CloudApi, DatasetProfileOptions } from "./cloud-api.js";

/** ?baseModel=&maxLength= of a dataset profile (left out when absent). */
export const profileQuery = (o: DatasetProfileRequest): Record<string, string | undefined> => ({
  baseModel: o.baseModel,
  maxLength: o.maxLength === undefined ? undefined : String(o.maxLength),
});

export interface WaitForDatasetProfileOptions extends DatasetProfileOptions {
  /** Give up waiting after this long and resolve with the pending profile (default 60 s). */
  timeoutMs?: number;
  /** Between two reads (default 500 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Hears each pending read's progress (0 to 1). */
  onProgress?: (progress: number) => void;
}

/** The profile once it is ready or failed, or as it stands (pending) when `timeoutMs` passes first. */
export async function waitForDatasetProfile(
  client: Pick<CloudApi, "getDatasetProfile">,
  datasetId: string,
  options: WaitForDatasetProfileOptions,
): Promise<DatasetProfile> {
  const { timeoutMs = 60_000, intervalMs = 500, signal, onProgress } = options;
  const deadline = Date.now() + timeoutMs;
  const query = { baseModel: options.baseModel, maxLength: options.maxLength };
  for (;;) {
    signal?.throwIfAborted();
    const profile = await client.getDatasetProfile(datasetId, query);
    if (profile.status !== "pending") return profile;
    onProgress?.(profile.progress);
    const wait = Math.min(intervalMs, deadline - Date.now());
    if (wait <= 0) return profile;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
