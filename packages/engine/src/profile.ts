// Per-op timings of the graph, enabled with SVC_ENGINE_PROFILE=1 (printed by the benchmark).
const profiling = process.env.SVC_ENGINE_PROFILE === "1";
export const profile = new Map<string, { ms: number; calls: number }>();

export function tick(): number {
  return profiling ? performance.now() : 0;
}

export function tock(label: string, start: number): void {
  if (!profiling) return;
  const entry = profile.get(label) ?? { ms: 0, calls: 0 };
  entry.ms += performance.now() - start;
  entry.calls++;
  profile.set(label, entry);
}
