// Turns of the event loop for the event streams' background work (admitting
// a stream, a replay page, a slice of a live fan-out), taken only while no
// connection waits to be accepted.
//
// Why: libuv (1.45 on, so Node 20) accepts one connection per listening
// socket per turn of the event loop. A burst of 500 stream connections fills
// the kernel's accept queue, and every connection behind them (a /healthz,
// an edge call) waits until all of those ahead were accepted, one per turn.
// When each turn also admits a stream and writes replay pages (milliseconds
// of socket writes), 500 turns take a second or more, while the event loop
// itself never blocks for long. So background work steps aside: a turn that
// accepted a connection (more may be waiting) runs none of it, and the
// accept queue drains at the pace of near-empty turns. Never for long: every
// MAX_DEFER_MS of deferring, one step runs anyway, so a flood of connections
// slows the streams' work without stopping it.
import type { Server } from "node:net";

/** Background steps run per turn. */
const DEFAULT_PER_TURN = 4;
/** The longest background work waits for accepts. */
export const MAX_DEFER_MS = 50;

export class BackgroundTurns {
  private readonly waiting: (() => void)[] = [];
  private accepted = 0;
  private seen = 0;
  private scheduled = false;
  private deferredSince: number | null = null;

  constructor(private readonly perTurn = DEFAULT_PER_TURN) {}

  /** Counts the connections `server` accepts (every listener of the process should be watched). */
  watch(server: Server): void {
    server.on("connection", () => {
      this.accepted++;
    });
  }

  /** Resolves in a later turn of the event loop, one in which no connection was just accepted. */
  turn(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  /** Steps waiting for a turn (for tests). */
  get pending(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.pump);
  }

  private readonly pump = () => {
    this.scheduled = false;
    let steps = this.perTurn;
    if (this.accepted !== this.seen) {
      // This turn's poll phase accepted a connection: the next turn, kept short, may accept another.
      this.seen = this.accepted;
      const now = performance.now();
      this.deferredSince ??= now;
      if (now - this.deferredSince < MAX_DEFER_MS) return this.schedule();
      // Deferred long enough: one step, and the accepting goes on.
      steps = 1;
      this.deferredSince = now;
    } else this.deferredSince = null;
    for (let i = 0; i < steps && this.waiting.length > 0; i++) this.waiting.shift()?.();
    if (this.waiting.length > 0) this.schedule();
  };
}
