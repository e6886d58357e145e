// Download progress of a Hub model or dataset: a bar redrawn in place on a
// terminal, plain lines otherwise (a start line and a done line, which is the
// text Studio's Run training log shows). `svc start` and `svc jobs follow`
// feed it the job's download events, `svc models pull` the downloader's.
import type { DownloadCompletedEvent, DownloadProgressEvent } from "@svc/wire";

/** 1234567 → "1.2 MB" (decimal units, as the Hub shows sizes). */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

type Progress = Pick<
  DownloadProgressEvent,
  "kind" | "repo" | "revision" | "files" | "bytesDone" | "bytesTotal"
>;
type Completed = Pick<DownloadCompletedEvent, "kind" | "repo" | "revision" | "bytes" | "fromCache">;

const what = (e: { kind: "model" | "dataset"; repo: string }) =>
  `${e.kind === "model" ? "base model" : "dataset"} ${e.repo}`;

/** `downloading base model Qwen/Qwen3-0.6B [#######-----]  1.2 GB / 1.5 GB  80%  (2/4 files)` */
export function formatDownloadBar(p: Progress, width = 24): string {
  const fraction = p.bytesTotal > 0 ? Math.min(1, p.bytesDone / p.bytesTotal) : 0;
  const filled = Math.round(fraction * width);
  const done = p.files.filter((f) => f.bytesDone >= f.bytesTotal).length;
  return `downloading ${what(p)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)} ${String(Math.round(fraction * 100)).padStart(3)}%  (${done}/${p.files.length} files)`;
}

export function formatDownloadStart(p: Progress): string {
  return `downloading ${what(p)} at ${p.revision.slice(0, 12)}: ${p.files.length} file${p.files.length === 1 ? "" : "s"}, ${formatBytes(p.bytesTotal)}`;
}

export function formatDownloadDone(e: Completed): string {
  const how = e.fromCache ? "found in the Hugging Face cache" : "downloaded";
  return `${what(e)} at ${e.revision.slice(0, 12)}: ${formatBytes(e.bytes)} ${how}`;
}

/** Prints one download's progress: a redrawn bar on a TTY, a start line otherwise; done() ends it. */
export class DownloadPrinter {
  private started = new Set<string>();
  /** Whether the bar is on screen (the cursor is at its end). */
  barShown = false;

  constructor(
    private readonly out: NodeJS.WritableStream & { columns?: number },
    private readonly tty: boolean,
  ) {}

  progress(p: Progress): void {
    if (this.tty) {
      const width = Math.max(
        10,
        Math.min(30, (this.out.columns ?? 100) - formatDownloadBar(p, 0).length - 2),
      );
      this.out.write(`\r\x1b[2K${formatDownloadBar(p, width)}`);
      this.barShown = true;
      return;
    }
    const key = `${p.kind}:${p.repo}@${p.revision}`;
    if (this.started.has(key)) return;
    this.started.add(key);
    this.out.write(`${formatDownloadStart(p)}\n`);
  }

  done(e: Completed): void {
    this.out.write(`${this.barShown ? "\r\x1b[2K" : ""}${formatDownloadDone(e)}\n`);
    this.barShown = false;
  }
}
