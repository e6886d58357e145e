// How a refusal words a range or a list of allowed values, and the range check
// itself, for the SDK's createTrainer (the server's validators word theirs in
// packages/server/src/http/validate.ts); the ranges are limits.ts'.
import type { NumericRange } from "./limits.js";

/** A range in words: "a number >= 1 and <= 1024", "a number > 0 and <= 1" (an integer range refuses fractions too). */
export function describeRange(range: NumericRange): string {
  const low = range.exclusiveMin !== undefined ? `> ${range.exclusiveMin}` : `>= ${range.min ?? 0}`;
  return `a number ${low} and <= ${range.max}`;
}

/** Whether a value is in the range (bounds as the range says; integers where it says). */
export function isInRange(range: NumericRange, value: unknown): value is number {
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  if (range.integer && !Number.isInteger(value)) return false;
  if (range.exclusiveMin !== undefined ? value <= range.exclusiveMin : value < (range.min ?? 0)) return false;
  return value <= range.max;
}

/** Allowed values in words: '"sft", "dpo" or "grpo"'. */
export function allowedValues(values: readonly string[]): string {
  const quoted = values.map((v) => JSON.stringify(v));
  return quoted.length < 2
    ? (quoted[0] ?? "nothing")
    : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}
