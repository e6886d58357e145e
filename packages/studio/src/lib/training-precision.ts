// A job's training precision for the Metadata sidebar: what the job asked for
// (Job.precision, Job.baseWeights) and, once a run started, what it trains in
// (its training.started event: "auto" resolved on the worker;
// docs/training-precision.md).

/** What a run trains in, as training.started reports it. */
export interface RanPrecision {
  precision: string;
  baseWeights: string | null;
}

/** The precision a training.started payload reports, or null (events before precisions were reported). */
export function precisionOfStarted(payload: Record<string, unknown>): RanPrecision | null {
  if (typeof payload.precision !== "string") return null;
  return {
    precision: payload.precision,
    baseWeights: typeof payload.baseWeights === "string" ? payload.baseWeights : null,
  };
}

/**
 * "bf16", "auto → bf16" (asked auto, ran bf16), "auto (bf16 where the CPU has
 * bf16 dot products)" before a run started, with ", int8 base" for an int8 base.
 */
export function formatPrecision(asked: string, baseWeights: string | null, ran: RanPrecision | null): string {
  const base = (ran?.baseWeights ?? baseWeights) === "int8" ? ", int8 base" : "";
  if (ran && ran.precision !== asked) return `${asked} → ${ran.precision}${base}`;
  if (!ran && asked === "auto") return `auto (bf16 where the CPU has bf16 dot products)${base}`;
  return `${asked}${base}`;
}
