// What `svc start` prints about the training dataset before following the job:
// its profile for the trainer's model (docs/cli.md#dataset-profile).
import type { DatasetProfile, ReadyDatasetProfile, TokenLengths } from "@svc/wire";

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

const lengths = (name: string, t: TokenLengths) => `${name} p50 ${t.p50} / p95 ${t.p95} / max ${t.max}`;

function duplicates(p: ReadyDatasetProfile): string {
  const d = p.duplicates;
  if (d.rows === 0) return "no duplicates";
  const shown = d.first.slice(0, 3).map((x) => `row ${x.row} repeats row ${x.duplicateOf}`);
  return `${plural(d.rows, "exact duplicate")} (${shown.join(", ")}${d.rows > shown.length ? ", ..." : ""})`;
}

function turns(p: ReadyDatasetProfile): string {
  const entries = Object.entries(p.turns).sort((a, b) => Number(a[0]) - Number(b[0]));
  if (entries.length === 1)
    return `${plural(entries[0][1], "row")} with ${plural(Number(entries[0][0]), "assistant turn")}`;
  return `assistant turns per row: ${entries.map(([turns, rows]) => `${turns} (${plural(rows, "row")})`).join(", ")}`;
}

function suggestion(p: ReadyDatasetProfile): string {
  const s = p.suggestedMaxLength;
  if (s.cappedAtContext)
    return `suggested maxLength ${s.maxLength}, the model's context (${plural(s.rowsOver, "row")} longer)`;
  return `suggested maxLength ${s.maxLength} (holds 95% of rows in full and every answer)`;
}

/** The lines svc start prints for a profile, first line unindented. */
export function formatDatasetProfile(p: DatasetProfile): string[] {
  if (p.status === "pending")
    return [
      `dataset profile: still computing (${Math.round(p.progress * 100)}%); Studio's job page shows it when ready`,
    ];
  if (p.status === "failed") return [`dataset profile: failed: ${p.error}`];
  const roles = (["system", "user", "assistant", "tool"] as const)
    .filter((r) => p.roles[r] > 0)
    .map((r) => `${p.roles[r]} ${r}`);
  const over =
    p.overMaxLength === 0
      ? "no row over it"
      : `${plural(p.overMaxLength, "row")} over it (cut on the prompt side, dropped if the answer cannot fit)`;
  return [
    `dataset profile (${p.baseModel}): ${plural(p.rows, "row")}, ${duplicates(p)}`,
    `  tokens per row: ${lengths("prompt", p.tokens.prompt)}, ${lengths("answer", p.tokens.answer)}, ${lengths("total", p.tokens.total)}`,
    `  messages: ${roles.join(", ")}; ${turns(p)}`,
    `  maxLength ${p.maxLength}: ${over}; ${suggestion(p)}`,
  ];
}
