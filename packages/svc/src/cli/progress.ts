// What `svc start` prints while a job runs. Plain lines when stdout is not a
// terminal (this is the text Studio's Run training log shows); one redrawn
// progress bar line on a terminal.
import type { JobEvent } from "@svc/wire";
import { DownloadPrinter } from "./download-progress.js";
import { grpoRewardsText, pausedReasonText } from "./grpo-text.js";

export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  return Math.abs(v) >= 1000 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : v.toFixed(4);
}

/** A fraction in [0, 1] (token accuracy, exact match) with 4 decimals. */
export function formatFraction(v: number): string {
  return v.toFixed(4);
}

type LogMetrics = Omit<ProgressState, "step" | "totalSteps" | "tokensPerSecond">;

/**
 * `loss=…`, `evalLoss=…`, `evalTokenAccuracy=…`, `evalExactMatch=…` for the numeric ones, in that order;
 * then a DPO job's held-out `evalPreferenceAccuracy=…` and `evalMargin=…` (docs/post-training.md#what-the-charts-mean).
 */
function metricParts(e: LogMetrics): string[] {
  const parts: string[] = [];
  if (typeof e.loss === "number") parts.push(`loss=${formatNumber(e.loss)}`);
  if (typeof e.evalLoss === "number") parts.push(`evalLoss=${formatNumber(e.evalLoss)}`);
  // Events recorded before the task metrics existed lack them: typeof, not !== null.
  if (typeof e.evalTokenAccuracy === "number")
    parts.push(`evalTokenAccuracy=${formatFraction(e.evalTokenAccuracy)}`);
  if (typeof e.evalExactMatch === "number") parts.push(`evalExactMatch=${formatFraction(e.evalExactMatch)}`);
  if (e.evalRewards) {
    parts.push(`evalPreferenceAccuracy=${formatFraction(e.evalRewards.accuracy)}`);
    parts.push(`evalMargin=${formatNumber(e.evalRewards.margin)}`);
  }
  return parts;
}

function metrics(e: LogMetrics): string {
  return metricParts(e)
    .map((part) => ` ${part}`)
    .join("");
}

function stepText(step: number, total: number | null): string {
  return total ? `step ${step}/${total}` : `step ${step}`;
}

/** What the started line adds when rows were cut or dropped to fit maxLength; nothing otherwise. */
function rowsCut(e: Extract<JobEvent, { type: "training.started" }>): string {
  const truncated = e.truncatedRows ?? 0;
  const dropped = e.droppedRows ?? 0;
  if (truncated === 0 && dropped === 0) return "";
  const rows = (n: number) => `${n} row${n === 1 ? "" : "s"}`;
  const named = (e.rowNotes ?? [])
    .filter((n) => n.action === "dropped")
    .slice(0, 3)
    .map((n) => `${n.set} row ${n.row}`);
  return `; ${rows(truncated)} truncated, ${rows(dropped)} dropped${named.length ? ` (${named.join(", ")}${dropped > named.length ? ", ..." : ""})` : ""}`;
}

/** What the run trains in (the job's precision resolved on its worker): ", in bf16", ", in fp32 on an int8 base". */
function precisionText(e: Extract<JobEvent, { type: "training.started" }>): string {
  if (!e.precision) return "";
  const base = e.baseWeights && e.baseWeights !== e.precision ? ` on an ${e.baseWeights} base` : "";
  return `, in ${e.precision}${base}`;
}

/**
 * How a training.started line begins: "started" for a job's first attempt; a
 * later one (a restart after a crash) names its attempt, the step it starts
 * from and why the one before it ended.
 */
function startedLead(e: Extract<JobEvent, { type: "training.started" }>): string {
  if (e.attempt === undefined || e.attempt <= 1) return "started";
  const from = `from step ${e.resumedFromStep ?? 0}`;
  const why = e.restartedAfter ? `; attempt ${e.attempt - 1} ended: ${e.restartedAfter}` : "";
  return `attempt ${e.attempt} started ${from}${why}\nstarted`;
}

/** One plain line per event, or null for events that print nothing. */
export function formatEventLine(event: JobEvent, totalSteps: number | null): string | null {
  switch (event.type) {
    case "training.started":
      return `${startedLead(event)}: ${event.totalSteps} steps, ${event.trainExamples} train / ${event.evalExamples} eval examples, base model ${event.baseModel}${precisionText(event)}${rowsCut(event)}`;
    case "training.log":
      return `${stepText(event.step, totalSteps)}${metrics(event)}${grpoRewardsText(event)}`;
    case "checkpoint.saved":
      return `checkpoint saved at step ${event.step} (${event.artifact.name})`;
    case "training.completed": {
      const n = event.artifacts.length;
      const m = event.metrics;
      const parts = [`completed: ${n} artifact${n === 1 ? "" : "s"}`, `${m.steps} steps`];
      if (typeof m.finalLoss === "number") parts.push(`final loss=${formatNumber(m.finalLoss)}`);
      if (typeof m.evalLoss === "number") parts.push(`evalLoss=${formatNumber(m.evalLoss)}`);
      parts.push(`${m.trainSeconds.toFixed(1)}s`);
      return parts.join(", ");
    }
    case "training.failed":
      return `failed${event.step === null ? "" : ` at step ${event.step}`}: ${event.error}`;
    case "training.cancelled":
      return `cancelled${event.step === null ? "" : ` at step ${event.step}`}`;
    case "training.paused":
      return `paused${event.step === null ? "" : ` at step ${event.step}`}${event.reason ? `: ${pausedReasonText(event.reason, event.jobId)}` : " (POST /v1/jobs/:id/resume resumes it)"}`;
    case "training.resumed":
      return "resumed: queued to go on from its latest checkpoint";
    default:
      return null;
  }
}

export interface ProgressState {
  step: number;
  totalSteps: number | null;
  loss: number | null;
  evalLoss: number | null;
  evalTokenAccuracy?: number | null;
  evalExactMatch?: number | null;
  /** Method "dpo": the latest eval's preference figures. */
  evalRewards?: { accuracy: number; margin: number } | null;
  tokensPerSecond: number | null;
}

/** `[##########----------]  30/60  50%  loss=1.2345  evalLoss=1.4567  evalTokenAccuracy=0.8125  812 tok/s` */
export function formatProgressBar(p: ProgressState, width = 24): string {
  const total = p.totalSteps ?? 0;
  const fraction = total > 0 ? Math.min(1, p.step / total) : 0;
  const filled = Math.round(fraction * width);
  const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
  const count = total > 0 ? `${String(p.step).padStart(String(total).length)}/${total}` : `${p.step}`;
  let s = `${bar} ${count} ${String(Math.round(fraction * 100)).padStart(3)}%`;
  for (const part of metricParts(p)) s += `  ${part}`;
  if (p.tokensPerSecond !== null) s += `  ${Math.round(p.tokensPerSecond)} tok/s`;
  return s;
}

/** Prints job events: plain lines, or a progress bar redrawn in place on a TTY. */
export class JobProgressPrinter {
  private state: ProgressState = {
    step: 0,
    totalSteps: null,
    loss: null,
    evalLoss: null,
    evalTokenAccuracy: null,
    evalExactMatch: null,
    tokensPerSecond: null,
  };
  private barShown = false;
  /** A Hub model's or dataset's download before training (download-progress.ts). */
  private readonly downloads: DownloadPrinter;

  constructor(
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
    private readonly tty = Boolean(out.isTTY),
  ) {
    this.downloads = new DownloadPrinter(out, tty);
  }

  event(event: JobEvent): void {
    if (event.type === "download.progress") {
      this.downloads.progress(event);
      return;
    }
    if (event.type === "download.completed") {
      this.downloads.done(event);
      return;
    }
    if (event.type === "training.started") {
      this.state.totalSteps = event.totalSteps;
      // A restart or resume trains again from here: the bar goes back with it.
      if (event.resumedFromStep !== undefined) this.state.step = event.resumedFromStep;
    }
    if (event.type === "training.log") {
      this.state.step = event.step;
      if (event.loss !== null) this.state.loss = event.loss;
      if (event.evalLoss !== null) this.state.evalLoss = event.evalLoss;
      if (typeof event.evalTokenAccuracy === "number") this.state.evalTokenAccuracy = event.evalTokenAccuracy;
      if (typeof event.evalExactMatch === "number") this.state.evalExactMatch = event.evalExactMatch;
      if (event.evalRewards) this.state.evalRewards = event.evalRewards;
      if (event.tokensPerSecond !== null) this.state.tokensPerSecond = event.tokensPerSecond;
    }
    if (!this.tty) {
      const line = formatEventLine(event, this.state.totalSteps);
      if (line !== null) this.out.write(`${line}\n`);
      return;
    }
    if (event.type === "training.log") {
      // The bar takes what the line's text leaves of the terminal's width.
      const text = formatProgressBar(this.state, 0).length - 2;
      const width = Math.max(10, Math.min(30, (this.out.columns ?? 100) - text - 2));
      this.out.write(`\r\x1b[2K${formatProgressBar(this.state, width)}`);
      this.barShown = true;
      return;
    }
    const line = formatEventLine(event, this.state.totalSteps);
    if (line === null) return;
    this.line(line);
  }

  /** A message above the bar (the bar is redrawn at the next log event). */
  line(text: string): void {
    if (this.tty && this.barShown) {
      this.out.write(`\r\x1b[2K${text}\n`);
      this.barShown = this.state.step > 0;
      if (this.barShown) this.out.write(formatProgressBar(this.state));
      return;
    }
    this.out.write(`${text}\n`);
  }

  finish(): void {
    if (this.tty && (this.barShown || this.downloads.barShown)) this.out.write("\n");
    this.barShown = false;
  }
}
