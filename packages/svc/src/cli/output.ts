// Small printing helpers: aligned tables for the list commands and the one-line
// error messages every command ends with on failure.
import { CloudApiError } from "../sdk/client.js";
import { UsageError } from "./args.js";

export function table(rows: string[][], header: string[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return all
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]))).join("  "))
    .join("\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** One line for stderr, and the exit code it deserves. */
export function describeError(err: unknown): { message: string; exitCode: number } {
  if (err instanceof UsageError) return { message: err.message, exitCode: 2 };
  if (err instanceof CloudApiError) {
    const where = err.status > 0 ? ` (HTTP ${err.status} ${err.code})` : "";
    return { message: `${err.message}${where}`, exitCode: 1 };
  }
  if (err instanceof Error) return { message: err.message, exitCode: 1 };
  return { message: String(err), exitCode: 1 };
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}
