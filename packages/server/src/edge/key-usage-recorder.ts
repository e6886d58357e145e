// What deployment keys use, recorded off the request path: lastUsedAt and the
// per-day counters (requests, prompt and completion tokens) are collected in
// memory and written in one batch every second, and on close.
import type { DeploymentStore } from "../store/deployment-store.js";
import { type KeyUsageIncrement, type KeyUsageStore, utcDay } from "../store/key-usage-store.js";

/** Adds a served request's tokens to the day the request was counted on. */
export type TokenMeter = (promptTokens: number, completionTokens: number) => void;

/** Token counts come from generation results and upstream answers: anything but a count adds nothing. */
const count = (n: number): number => (Number.isSafeInteger(n) && n > 0 ? n : 0);

export class KeyUsageRecorder {
  /** key id → time of last use (ms since the epoch). */
  private lastUsed = new Map<string, number>();
  /** "<key id> <day>" → what that key used that day since the last flush. */
  private counters = new Map<string, KeyUsageIncrement>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deployments: DeploymentStore,
    private readonly usage: KeyUsageStore,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** An authenticated use of the key (lastUsedAt), refused by the rate limit or not. */
  touch(keyId: string): void {
    this.lastUsed.set(keyId, Date.now());
  }

  /**
   * Counts one served request on today's UTC day. Its tokens, known only when
   * the answer ends (maybe after midnight), go to the same day through the meter.
   */
  request(keyId: string): TokenMeter {
    const day = utcDay(Date.now());
    this.add({ keyId, day, requests: 1, promptTokens: 0, completionTokens: 0 });
    let metered = false;
    return (promptTokens, completionTokens) => {
      if (metered) return;
      metered = true;
      this.add({
        keyId,
        day,
        requests: 0,
        promptTokens: count(promptTokens),
        completionTokens: count(completionTokens),
      });
    };
  }

  private add(increment: KeyUsageIncrement): void {
    const slot = `${increment.keyId} ${increment.day}`;
    const held = this.counters.get(slot);
    if (!held) {
      this.counters.set(slot, { ...increment });
      return;
    }
    held.requests += increment.requests;
    held.promptTokens += increment.promptTokens;
    held.completionTokens += increment.completionTokens;
  }

  /** Flushes run one after another, so close() also waits for one the timer started. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.lastUsed.size > 0) {
      const batch = this.lastUsed;
      this.lastUsed = new Map();
      try {
        await this.deployments.touchKeys(
          new Map([...batch].map(([id, ms]) => [id, new Date(ms).toISOString()])),
        );
      } catch (error) {
        console.error("svc server: recording key use failed:", (error as Error).message);
      }
    }
    if (this.counters.size > 0) {
      const batch = this.counters;
      this.counters = new Map();
      try {
        await this.usage.add([...batch.values()]);
      } catch (error) {
        // The batch was one transaction, so nothing of it was written: keep it for the next flush.
        for (const increment of batch.values()) this.add(increment);
        console.error("svc server: recording key usage failed:", (error as Error).message);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
