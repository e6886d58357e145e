// How `svc start` and `svc jobs follow` show an outage of the cloud API: one
// line per notice above the progress bar, and while a remote API is retried, a
// countdown that ticks every second on a terminal (one line per retry otherwise).
import { type ApiNotice, formatApiNotice, seconds } from "../sdk/api-recovery.js";
import type { JobProgressPrinter } from "./progress.js";

export class OutagePrinter {
  private ticker: NodeJS.Timeout | undefined;

  constructor(
    private readonly printer: JobProgressPrinter,
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly tty = Boolean(out.isTTY),
  ) {}

  readonly notice = (n: ApiNotice): void => {
    this.stopCountdown();
    if (n.kind !== "retrying" || !this.tty) {
      this.printer.line(formatApiNotice(n));
      return;
    }
    // On a terminal the retry line counts down in place; the next event or notice overwrites it.
    const retryAt = Date.now() + n.delayMs;
    const giveUpAt = Date.now() + n.giveUpInMs;
    const draw = () =>
      this.out.write(
        `\r\x1b[2Kcloud API unreachable; retry ${n.attempt} in ${seconds(retryAt - Date.now())} (giving up in ${seconds(giveUpAt - Date.now())})`,
      );
    draw();
    this.ticker = setInterval(draw, 1000);
    this.ticker.unref();
  };

  /** Ends a countdown line (before the next event, or at exit). */
  stopCountdown(): void {
    if (this.ticker === undefined) return;
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.out.write("\r\x1b[2K");
  }
}
