// A trainer's datasets onto the server: a project file, a URL the server
// fetches, inline rows, or a Hub dataset the server reads (createTrainer's
// dataset and evalDataset; trainer.ts start()).
import { readFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import type { Dataset, DatasetProfileRequest } from "@svc/wire";
import type { CloudApiClient } from "./client.js";
import type { HubDatasetNotice } from "./trainer.js";
import type { DatasetSource } from "./trainer-options.js";

export async function uploadDataset(
  client: CloudApiClient,
  source: DatasetSource,
  projectDir: string,
  fallbackName: string,
  profile: DatasetProfileRequest = {},
  onHubDataset?: (notice: Omit<HubDatasetNotice, "set">) => void,
): Promise<Dataset> {
  if (source.type === "url")
    return client.createDatasetFromUrl({
      url: source.url,
      token: source.token,
      name: fallbackName,
      ...profile,
    });
  if (source.type === "huggingface") {
    const { type: _, ...request } = source;
    onHubDataset?.({ request });
    const { dataset, source: read } = await client.createDatasetFromHub({ huggingface: request, ...profile });
    onHubDataset?.({ request, dataset, source: read });
    return dataset;
  }
  if (source.type === "inline") {
    const jsonl = source.rows.map((row) => JSON.stringify(row)).join("\n");
    return client.uploadDataset(`${jsonl}\n`, { name: fallbackName, ...profile });
  }
  const path = resolve(projectDir, source.path);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new Error(
      `dataset file ${source.path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : (err as Error).message} (resolved to ${path})`,
    );
  }
  return client.uploadDataset(text, { name: basename(path), ...profile });
}
