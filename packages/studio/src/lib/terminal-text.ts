// Renders a process's raw output the way a terminal shows it: a carriage
// return rewrites the current line (progress bars), ANSI colour codes are dropped.
import { START_OUTPUT_JOB_ID } from "@svc/wire";

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

export function terminalText(raw: string): string {
  const lines: string[] = [];
  for (const line of raw.replace(ANSI, "").replace(/\r\n/g, "\n").split("\n")) {
    const parts = line.split("\r");
    let shown = "";
    for (const part of parts) shown = part + shown.slice(part.length);
    lines.push(shown);
  }
  return lines.join("\n");
}

/** The job id from `svc start`'s `job <uuid> submitted` line (fallback when the response header is absent). */
export function jobIdFromOutput(raw: string): string | null {
  return raw.match(START_OUTPUT_JOB_ID)?.[1] ?? null;
}
