// Reconnect delays: exponential growth capped at maxMs, with "equal jitter"
// (half the cap plus a uniform draw over the other half), so clients dropped
// together do not reconnect together, yet none retries at once.

export interface BackoffOptions {
  baseMs?: number;
  maxMs?: number;
  random?: () => number;
}

export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 250;
  const max = options.maxMs ?? 10_000;
  const random = options.random ?? Math.random;
  const cap = Math.min(max, base * 2 ** Math.max(0, attempt));
  return Math.floor(cap / 2 + random() * (cap / 2));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
