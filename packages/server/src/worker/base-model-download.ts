// A Hub base model is part of its job: the worker fetches it (or finds it in
// the Hugging Face cache) before training, storing download.progress events
// (at most PROGRESS_EVENT_MS apart) and a download.completed event before
// training.started, and records the commit on the job row. A progress event
// that cannot be stored is lost alone: the writes after it still run, and only
// a failure of download.completed's own write fails the download.
import { type HubProgress, parseHubName } from "../hub/index.js";
import type { ModelRegistry, RegisteredModel } from "../models/model-registry.js";
import type { JobRow, JobStore, NewJobEvent } from "../store/job-store.js";

const PROGRESS_EVENT_MS = 250;

export async function downloadBaseModel(
  models: Pick<ModelRegistry, "hub" | "describeHub">,
  jobs: Pick<JobStore, "appendEvents" | "setBaseModelRevision">,
  row: Pick<JobRow, "id" | "base_model">,
  signal: AbortSignal,
): Promise<RegisteredModel> {
  const name = row.base_model;
  const repo = parseHubName(name)?.repo ?? name;
  // Events are stored one after another, in the order they were made. Each
  // write waits for the one before it to settle, not to succeed: a rejected
  // write rejects its own promise only, never the writes queued after it.
  let previous: Promise<unknown> = Promise.resolve();
  const append = (event: NewJobEvent): Promise<void> => {
    const write = previous.then(() => jobs.appendEvents(row.id, [event]));
    previous = write.catch(() => {});
    return write;
  };
  let lastEvent = 0;
  // The newest progress, and whether it was stored: the last one always is, so a bar ends full.
  let latest: { files: HubProgress[]; revision: string; stored: boolean } | null = null;
  const store = (files: HubProgress[], revision: string) =>
    void append({
      type: "download.progress",
      kind: "model",
      repo,
      revision,
      files: files.map((f) => ({ name: f.file, bytesDone: f.bytesDone, bytesTotal: f.bytesTotal })),
      bytesDone: files.reduce((sum, f) => sum + f.bytesDone, 0),
      bytesTotal: files.reduce((sum, f) => sum + f.bytesTotal, 0),
    }).catch((error) =>
      console.error(
        `svc worker: job ${row.id}: a download.progress event could not be stored (${(error as Error).message}); later ones still are`,
      ),
    );
  const onProgress = (files: HubProgress[], revision: string) => {
    const now = Date.now();
    latest = { files, revision, stored: now - lastEvent >= PROGRESS_EVENT_MS };
    if (!latest.stored) return;
    lastEvent = now;
    store(files, revision);
  };
  try {
    const snapshot = await models.hub.fetch(name, { onProgress, signal });
    const last = latest as { files: HubProgress[]; revision: string; stored: boolean } | null;
    if (last && !last.stored) store(last.files, last.revision);
    await jobs.setBaseModelRevision(row.id, snapshot.revision);
    await append({
      type: "download.completed",
      kind: "model",
      repo,
      revision: snapshot.revision,
      bytes: snapshot.bytes,
      fromCache: snapshot.fromCache,
    });
    return models.describeHub(name, {
      dir: snapshot.dir,
      revision: snapshot.revision,
      bytes: snapshot.bytes,
    });
  } finally {
    await previous;
  }
}
