// Follows one job's SSE stream: status per the spec's state table, loss series,
// the 500-row event log, artifact count and failure text. The browser's own
// EventSource reconnect (with Last-Event-ID) handles interruptions; `end` closes.
import { JOB_EVENT_TYPES, type JobStatus } from "@svc/wire";
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
  const step = typeof payload.step === "number" ? payload.step : null;
  switch (event) {
    case "training.started":
      next.status = "running";
      if (typeof payload.totalSteps === "number") next.totalSteps = payload.totalSteps;
      next.precision = precisionOfStarted(payload) ?? s.precision;
      if (typeof payload.attempt === "number") {
        next.attempt = payload.attempt;
        next.restartedAfter = typeof payload.restartedAfter === "string" ? payload.restartedAfter : null;
      }
      // A resumed run logs the steps after its checkpoint again: its frames replace the earlier ones.
      if (typeof payload.resumedFromStep === "number") {
        next.series = dropStepsAfter(s.series, payload.resumedFromStep);
        next.grpo = dropGrpoStepsAfter(s.grpo, payload.resumedFromStep);
        next.lastStep = payload.resumedFromStep;
      }
      break;
    case "training.log":
      next.series = addLogFrame(s.series, payload);
      next.grpo = addGrpoFrame(s.grpo, payload);
      next.runtime = runtimeOfLog(payload) ?? s.runtime;
      if (step !== null) next.lastStep = step;
      break;
    case "checkpoint.saved":
      if (step !== null) next.lastStep = Math.max(step, s.lastStep ?? 0);
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
