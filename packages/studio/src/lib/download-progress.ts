// Hub downloads a job waits on, from its download.progress / download.completed
// events: per repo, the bytes of each file and of the whole, for the job
// page's progress bars; and the event log's one-line messages for them.
import { formatBytes } from "./model-facts.js";
export interface DownloadFile {
  name: string;
  bytesDone: number;
  bytesTotal: number;
}

export interface Download {
  kind: "model" | "dataset";
  repo: string;
  revision: string;
  files: DownloadFile[];
  bytesDone: number;
  bytesTotal: number;
  done: boolean;
  fromCache: boolean;
}

type Payload = Record<string, unknown>;

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const text = (v: unknown) => (typeof v === "string" ? v : "");

export const downloadKey = (p: Payload) => `${text(p.kind)}:${text(p.repo)}`;

/** The downloads after one event (a new array; other events leave it as it is). */
export function applyDownloadEvent(downloads: readonly Download[], event: string, p: Payload): Download[] {
  if (event !== "download.progress" && event !== "download.completed") return downloads as Download[];
  const key = downloadKey(p);
  const index = downloads.findIndex((d) => `${d.kind}:${d.repo}` === key);
  const before = index >= 0 ? downloads[index] : null;
  const kind = p.kind === "dataset" ? "dataset" : "model";
  let next: Download;
  if (event === "download.progress") {
    const files = Array.isArray(p.files)
      ? (p.files as Payload[]).map((f) => ({
          name: text(f.name),
          bytesDone: num(f.bytesDone),
          bytesTotal: num(f.bytesTotal),
        }))
      : (before?.files ?? []);
    next = {
      kind,
      repo: text(p.repo),
      revision: text(p.revision),
      files,
      bytesDone: num(p.bytesDone),
      bytesTotal: num(p.bytesTotal),
      done: false,
      fromCache: false,
    };
  } else {
    const bytes = num(p.bytes);
    next = {
      kind,
      repo: text(p.repo),
      revision: text(p.revision),
      files: (before?.files ?? []).map((f) => ({ ...f, bytesDone: f.bytesTotal })),
      bytesDone: bytes,
      bytesTotal: bytes,
      done: true,
      fromCache: p.fromCache === true,
    };
  }
  const out = downloads.slice();
  if (index >= 0) out[index] = next;
  else out.push(next);
  return out;
}

/** Done as a fraction 0..1 (1 for an empty download). */
export const fraction = (done: number, total: number) => (total > 0 ? Math.min(1, done / total) : 1);

/** The event log's message: `model Qwen/Qwen3-0.6B: 12.3 MB / 1.2 GB (1%), 2 of 5 files`. */
export function formatDownloadMessage(event: string, p: Payload): string {
  const what = `${text(p.kind) || "model"} ${text(p.repo)}`;
  if (event === "download.completed") {
    const rev = text(p.revision) ? ` @ ${text(p.revision).slice(0, 12)}` : "";
    return p.fromCache === true
      ? `${what}${rev}: in the cache (${formatBytes(num(p.bytes))})`
      : `${what}${rev}: downloaded ${formatBytes(num(p.bytes))}`;
  }
  const files = Array.isArray(p.files) ? (p.files as Payload[]) : [];
  const finished = files.filter((f) => num(f.bytesTotal) > 0 && num(f.bytesDone) >= num(f.bytesTotal)).length;
  const percent = Math.floor(fraction(num(p.bytesDone), num(p.bytesTotal)) * 100);
  return `${what}: ${formatBytes(num(p.bytesDone))} / ${formatBytes(num(p.bytesTotal))} (${percent}%), ${finished} of ${files.length} files`;
}
