// Where a job trains, from its training.log events: the backend, the device
// ("cuda", "cuda x4", "cpu") and the peak memory the torch backend reports.
// Engine events carry none of these; a job without them trained on the engine.
import { formatBytes } from "./model-facts.js";

export interface TrainingRuntime {
  backend: "engine" | "torch";
  device: string | null;
  memoryBytes: number | null;
}

/** The runtime a training.log payload reports, or null when it reports none (the engine's). */
export function runtimeOfLog(payload: Record<string, unknown>): TrainingRuntime | null {
  if (payload.backend !== "torch" && payload.backend !== "engine") return null;
  return {
    backend: payload.backend,
    device: typeof payload.device === "string" ? payload.device : null,
    memoryBytes: typeof payload.memoryBytes === "number" ? payload.memoryBytes : null,
  };
}

/**
 * "torch · cuda x4" / "engine": the backend, and the device when known. A job
 * that logged steps without a runtime trained on the engine.
 */
export function formatBackend(jobBackend: string, runtime: TrainingRuntime | null, logged: boolean): string {
  if (!runtime) return logged ? "engine" : jobBackend === "auto" ? "auto (any worker)" : jobBackend;
  return runtime.device ? `${runtime.backend} · ${runtime.device}` : runtime.backend;
}

/** "GPU memory" on CUDA, "Memory (peak RSS)" on the CPU, with its size; null when not reported. */
export function formatMemory(runtime: TrainingRuntime | null): { label: string; value: string } | null {
  if (!runtime || runtime.memoryBytes === null) return null;
  const gpu = runtime.device?.startsWith("cuda") ?? false;
  return { label: gpu ? "GPU memory" : "Memory (peak RSS)", value: formatBytes(runtime.memoryBytes) };
}
