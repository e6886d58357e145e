// The usage cells of the API keys table: a key's totals over the server's
// summary window (KeyUsageSummary.days, 30), counts grouped by thousands.
import type { KeyUsageSummary } from "@svc/wire";

const counts = new Intl.NumberFormat("en-US");

export interface KeyUsageCells {
  requests: string;
  promptTokens: string;
  completionTokens: string;
  /** Tooltip of the row's usage cells. */
  title: string;
}

export function keyUsageCells(usage: KeyUsageSummary): KeyUsageCells {
  const total = usage.promptTokens + usage.completionTokens;
  return {
    requests: counts.format(usage.requests),
    promptTokens: counts.format(usage.promptTokens),
    completionTokens: counts.format(usage.completionTokens),
    title: `last ${usage.days} days (UTC, today included): ${counts.format(usage.requests)} requests, ${counts.format(total)} tokens`,
  };
}

/** The column heading that says which window the counts cover. */
export const keyUsageWindow = (days: number): string => `last ${days} days`;
