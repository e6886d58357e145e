// One event-stream connection: the Node response an SSE stream writes to, with
// its send buffer bounded. Replay writes with backpressure (write, then wait
// for `drained`); live events are pushed to every subscriber at once, and a
// subscriber whose unsent bytes pass the buffer limit is disconnected rather
// than buffered without end. So is one that accepts none of its pending bytes
// for a whole keep-alive interval (a client that stopped reading). Either
// reconnects with Last-Event-ID and resumes after the last frame it got.
import type { ServerResponse } from "node:http";

export interface SseConnectionLimits {
  /** Unsent bytes a connection may hold before it is disconnected. */
  bufferBytes: number;
  /** Interval of `: ping` comments; a connection stalled for a whole interval is disconnected. */
  keepAliveMs: number;
}

const PING = new TextEncoder().encode(": ping\n\n");

export class SseConnection {
  private timer: NodeJS.Timeout;
  private waiters: (() => void)[] = [];
  /** Whether the send buffer was full at the previous keep-alive tick, and has not drained since. */
  private stalledSinceTick = false;
  /** Why the server disconnected this stream (null while open, or when the client left). */
  dropped: string | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly limits: SseConnectionLimits,
  ) {
    const wake = () => {
      this.stalledSinceTick = false;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    };
    res.on("drain", wake);
    res.on("close", () => {
      clearInterval(this.timer);
      wake();
    });
    // The first tick at a random point of the interval: streams opened together do not all ping (or
    // get dropped) in the same turn of the event loop.
    this.timer = setTimeout(() => {
      this.tick();
      if (this.closed) return;
      this.timer = setInterval(() => this.tick(), limits.keepAliveMs);
      this.timer.unref();
    }, Math.random() * limits.keepAliveMs);
    this.timer.unref();
  }

  get closed(): boolean {
    return (
      this.dropped !== null || this.res.destroyed || this.res.writableEnded || !!this.res.socket?.destroyed
    );
  }

  /** Replay: writes `bytes`; false when the caller should wait for `drained()` before writing more. */
  write(bytes: Uint8Array): boolean {
    if (this.closed || bytes.length === 0) return !this.closed;
    return this.res.write(bytes);
  }

  /** Live: writes `bytes` now, and disconnects the client when its unsent bytes pass the buffer limit. */
  push(bytes: Uint8Array): void {
    if (this.closed || bytes.length === 0) return;
    this.res.write(bytes);
    if (this.res.writableLength > this.limits.bufferBytes)
      this.drop(`its unsent bytes passed the ${this.limits.bufferBytes}-byte buffer limit`);
  }

  /** Resolves when the send buffer has room again, or the connection closed. */
  drained(): Promise<void> {
    if (this.closed || !this.res.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends the stream after what was written (after the `end` frame). */
  end(): void {
    if (!this.closed) this.res.end();
  }

  /** Disconnects at once, dropping what is unsent (the client resumes with Last-Event-ID). */
  drop(reason: string): void {
    if (this.closed) return;
    this.dropped = reason;
    // A reset, not a close: the kernel does not keep trying to deliver what a non-reader left unread.
    const socket = this.res.socket;
    if (socket) socket.resetAndDestroy();
    else this.res.destroy();
  }

  private tick(): void {
    if (this.closed) return;
    if (this.res.writableNeedDrain) {
      if (this.stalledSinceTick) {
        this.drop(`it read nothing for ${this.limits.keepAliveMs} ms`);
        return;
      }
      this.stalledSinceTick = true;
      return;
    }
    this.stalledSinceTick = false;
    this.res.write(PING);
  }
}
