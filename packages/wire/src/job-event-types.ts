// The runtime list of a job's event types, for the readers that subscribe by
// name (Studio's EventSource listeners) or check a stored type. The compiler
// holds it to the JobEvent union: a type added there and not here fails the build.
import type { JobEventType } from "./job-events.js";

/** Every event type of a job's stream, in the order a job makes them; "end" closes the stream. */
export const JOB_EVENT_TYPES = [
  "download.progress",
  "download.completed",
  "training.started",
  "training.log",
  "checkpoint.saved",
  "training.completed",
  "training.failed",
  "training.cancelled",
  "training.paused",
  "training.resumed",
  "end",
] as const satisfies readonly JobEventType[];

type Unlisted = Exclude<JobEventType, (typeof JOB_EVENT_TYPES)[number]>;
/** Compiles only while JOB_EVENT_TYPES lists every JobEvent type (an unlisted one is named in the error). */
export const JOB_EVENT_TYPES_COMPLETE: [Unlisted] extends [never] ? true : Unlisted = true;

export function isJobEventType(type: string): type is JobEventType {
  return (JOB_EVENT_TYPES as readonly string[]).includes(type);
}
