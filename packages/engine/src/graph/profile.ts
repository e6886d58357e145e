// Per-op timings of the graph, enabled with SVC_ENGINE_PROFILE=1 (wall time,
// printed by the benchmark) or SVC_ENGINE_PROFILE=cpu: the process's CPU time
// instead, which other processes on a busy machine barely disturb (with
// SVC_THREADS=1 it is the op's own cost; with more threads it sums them).
const mode = process.env.SVC_ENGINE_PROFILE;
const profiling = mode === "1" || mode === "cpu";
const now =
  mode === "cpu"
    ? () => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
      }
    : () => performance.now();
export const profile = new Map<string, { ms: number; calls: number }>();

export function tick(): number {
  return profiling ? now() : 0;
}

export function tock(label: string, start: number): void {
  if (!profiling) return;
  const entry = profile.get(label) ?? { ms: 0, calls: 0 };
  entry.ms += now() - start;
  entry.calls++;
  profile.set(label, entry);
}
