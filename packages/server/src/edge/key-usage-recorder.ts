// lastUsedAt of deployment keys, updated best-effort off the request path:
// uses are collected in memory and written in one batch every second.
import type { DeploymentStore } from "../store/deployment-store.js";

export class KeyUsageRecorder {
  /** key id → time of last use (ms since the epoch). */
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deployments: DeploymentStore,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  record(keyId: string): void {
    this.pending.set(keyId, Date.now());
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.deployments.touchKeys(
        new Map([...batch].map(([id, ms]) => [id, new Date(ms).toISOString()])),
      );
    } catch (error) {
      console.error("svc server: recording key use failed:", (error as Error).message);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
