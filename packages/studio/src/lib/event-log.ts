// The job-detail event log: one row per SSE frame, the event name next to a
// message formatted per the spec's Events table, keeping the newest 500 rows.
// A download's progress frames (several a second) share one row that updates.
import { formatDownloadMessage } from "./download-progress.js";

export const EVENT_LOG_LIMIT = 500;

export interface EventLogEntry {
  /** Monotonic row key (the SSE id when the server sent one). */
  key: string;
  event: string;
  message: string;
  timestamp: string | null;
  /** Rows of one group (a download's progress) replace each other while they follow one another. */
  group?: string;
}

type Payload = Record<string, unknown>;

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** `step=<n>` then ` loss=<v>` and/or ` evalLoss=<v>` for the fields that are numeric. */
export function formatTrainingLog(p: Payload): string {
  let text = `step=${p.step}`;
  if (isNumber(p.loss)) text += ` loss=${p.loss}`;
  if (isNumber(p.evalLoss)) text += ` evalLoss=${p.evalLoss}`;
  return text;
}

/** `<n> artifact` / `<n> artifacts`. */
export function formatArtifactCount(n: number): string {
  return `${n} ${n === 1 ? "artifact" : "artifacts"}`;
}

export function artifactCount(p: Payload): number {
  return Array.isArray(p.artifacts) ? p.artifacts.length : isNumber(p.artifacts) ? p.artifacts : 0;
}

/** The log message for one event, given its name and parsed JSON payload (raw text kept for training.started). */
export function formatEventMessage(event: string, payload: Payload, raw: string): string {
  switch (event) {
    case "training.started":
      return raw;
    case "training.log":
      return formatTrainingLog(payload);
    case "checkpoint.saved":
      return `step=${payload.step}`;
    case "training.completed":
      return formatArtifactCount(artifactCount(payload));
    case "training.failed":
      return typeof payload.error === "string" ? payload.error : String(payload.error ?? "");
    case "download.progress":
    case "download.completed":
      return formatDownloadMessage(event, payload);
    case "training.cancelled":
      return payload.step == null ? "cancelled" : `cancelled at step=${payload.step}`;
    case "training.paused":
      return payload.step == null ? "paused" : `paused at step=${payload.step}`;
    case "training.resumed":
      return "resumed from the latest checkpoint";
    default:
      return raw;
  }
}

/** Appends one row and drops the oldest beyond the limit (returns a new array). */
export function appendLogEntry(
  entries: readonly EventLogEntry[],
  entry: EventLogEntry,
  limit = EVENT_LOG_LIMIT,
): EventLogEntry[] {
  const last = entries[entries.length - 1];
  if (entry.group !== undefined && last?.group === entry.group) return [...entries.slice(0, -1), entry];
  const next = entries.length >= limit ? entries.slice(entries.length - limit + 1) : entries.slice();
  next.push(entry);
  return next;
}
