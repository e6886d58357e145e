// Follows one job's SSE stream: status per the spec's state table, loss series,
// the 500-row event log, artifact count and failure text. The browser's own
// EventSource reconnect (with Last-Event-ID) handles interruptions; `end` closes.
import { JOB_EVENT_TYPES, type JobEvent, type JobEventType, type JobStatus } from "@svc/wire";
import { useEffect, useState } from "react";
import { jobEventsUrl } from "../api.js";
import { applyDownloadEvent, type Download, downloadKey } from "../lib/download-progress.js";
import { appendLogEntry, artifactCount, type EventLogEntry, formatEventMessage } from "../lib/event-log.js";
import { addGrpoFrame, dropGrpoStepsAfter, type GrpoStep } from "../lib/grpo-series.js";
import { addLogFrame, dropStepsAfter, emptySeries, type LossSeries } from "../lib/loss-series.js";
import { precisionOfStarted, type RanPrecision } from "../lib/training-precision.js";
import { runtimeOfLog, type TrainingRuntime } from "../lib/training-runtime.js";

/** The stream's events the page listens to by name: every job event type but "end", which closes it. */
export const JOB_EVENT_NAMES = JOB_EVENT_TYPES.filter((type) => type !== "end");

export interface JobEventState {
  status: JobStatus | null;
  series: LossSeries;
  /** A GRPO job's logged steps (training.log grpo): its charts and Samples panel. */
  grpo: GrpoStep[];
  log: EventLogEntry[];
  artifacts: number | null;
  failure: string | null;
  interrupted: boolean;
  ended: boolean;
  totalSteps: number | null;
  lastStep: number | null;
  /** Hub downloads the job waited on (download.progress / download.completed). */
  downloads: Download[];
  /** The backend, device and memory of the latest training.log that reported them (torch jobs). */
  runtime: TrainingRuntime | null;
  /** The attempt of the latest training.started (a restart after a crash is the next), and why the one before ended. */
  attempt: number | null;
  restartedAfter: string | null;
  /** What the latest run trains in (training.started: the job's precision resolved on its worker). */
  precision: RanPrecision | null;
}

const initial = (): JobEventState => ({
  status: null,
  series: emptySeries(),
  grpo: [],
  log: [],
  artifacts: null,
  failure: null,
  interrupted: false,
  ended: false,
  totalSteps: null,
  lastStep: null,
  downloads: [],
  runtime: null,
  attempt: null,
  restartedAfter: null,
  precision: null,
});

const EVENT_TYPES: ReadonlySet<string> = new Set(JOB_EVENT_TYPES);

/**
 * A frame as the wire's JobEvent (its SSE name is its type), or null for a name the wire does not
 * define or a body that is not a JSON object: the stream's shape comes from @svc/wire, not from
 * checks written here. Fields that events recorded by older servers lack are optional in the wire.
 */
function asJobEvent(name: string, payload: Record<string, unknown>): JobEvent | null {
  if (!EVENT_TYPES.has(name) || typeof payload !== "object" || payload === null || Array.isArray(payload))
    return null;
  return { ...payload, type: name as JobEventType } as JobEvent;
}

function reduce(s: JobEventState, event: string, raw: string, id: string): JobEventState {
  let payload: Record<string, unknown> = {};
  try {
    payload = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    // keep the raw text as the message
  }
  const entry: EventLogEntry = {
    key: id || `${event}-${s.log.length}-${Date.now()}`,
    event,
    message: formatEventMessage(event, payload, raw),
    timestamp: typeof payload.timestamp === "string" ? payload.timestamp : null,
    group: event === "download.progress" ? `download:${downloadKey(payload)}` : undefined,
  };
  const next: JobEventState = {
    ...s,
    interrupted: false,
    log: appendLogEntry(s.log, entry),
    downloads: applyDownloadEvent(s.downloads, event, payload),
  };
  const ev = asJobEvent(event, payload);
  switch (ev?.type) {
    case "training.started":
      next.status = "running";
      next.totalSteps = ev.totalSteps;
      next.precision = precisionOfStarted(payload) ?? s.precision;
      if (ev.attempt !== undefined) {
        next.attempt = ev.attempt;
        next.restartedAfter = ev.restartedAfter ?? null;
      }
      // A resumed run logs the steps after its checkpoint again: its frames replace the earlier ones.
      if (ev.resumedFromStep !== undefined) {
        next.series = dropStepsAfter(s.series, ev.resumedFromStep);
        next.grpo = dropGrpoStepsAfter(s.grpo, ev.resumedFromStep);
        next.lastStep = ev.resumedFromStep;
      }
      break;
    case "training.log":
      next.series = addLogFrame(s.series, payload);
      next.grpo = addGrpoFrame(s.grpo, payload);
      next.runtime = runtimeOfLog(payload) ?? s.runtime;
      next.lastStep = ev.step;
      break;
    case "checkpoint.saved":
      next.lastStep = Math.max(ev.step, s.lastStep ?? 0);
      break;
    case "training.completed":
      next.status = "completed";
      next.artifacts = artifactCount(payload);
      break;
    case "training.failed":
      next.status = "failed";
      next.failure = entry.message;
      break;
    case "training.cancelled":
      next.status = "cancelled";
      break;
    case "training.paused":
      next.status = "paused";
      break;
    case "training.resumed":
      next.status = "queued";
      break;
  }
  return next;
}

export function useJobEvents(jobId: string | null): JobEventState {
  const [state, setState] = useState<JobEventState>(initial);
  useEffect(() => {
    setState(initial());
    if (!jobId) return;
    let source: EventSource;
    let lastId: string | undefined;
    let ended = false;
    let retry: number | undefined;
    const open = () => {
      source = new EventSource(jobEventsUrl(jobId, lastId));
      const onEvent = (e: MessageEvent<string>) => {
        if (e.lastEventId) lastId = e.lastEventId;
        setState((s) => reduce(s, e.type, e.data, e.lastEventId));
      };
      for (const name of JOB_EVENT_NAMES) source.addEventListener(name, onEvent);
      // Any frame, keep-alives included, means the stream is flowing again.
      source.addEventListener("ping", () =>
        setState((s) => (s.interrupted ? { ...s, interrupted: false } : s)),
      );
      source.addEventListener("end", () => {
        ended = true;
        source.close();
        setState((s) => ({ ...s, ended: true, interrupted: false }));
      });
      source.onerror = () => {
        setState((s) => (s.ended ? s : { ...s, interrupted: true }));
        // The browser reconnects by itself after a dropped stream, but gives up for good when the
        // reconnect gets an error answer (the cloud API was down): open a new stream after the last event.
        if (source.readyState === EventSource.CLOSED && !ended) retry = window.setTimeout(open, 3000);
      };
    };
    open();
    return () => {
      ended = true;
      window.clearTimeout(retry);
      source.close();
    };
  }, [jobId]);
  return state;
}
