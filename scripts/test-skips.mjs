// What a test run skipped, and why. Node 20's own closing lines count a
// skipped test but not a skipped suite (nothing inside a skipped describe
// runs, so its tests are in no count at all). scripts/test.mjs therefore runs
// this file as a second reporter: its default export writes one JSON line per
// skipped test or suite, and summarizeSkips() turns those lines into the
// run's closing summary, grouped by the missing piece that each skip reason
// names (`needs <piece>: <detail>`, packages/engine/src/testing/missing-piece.ts).
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";

/** The reporter: a JSON line per skipped test or suite. */
export default async function* skipReporter(source) {
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { skip, name, file, details } = event.data;
    if (skip === undefined || skip === false) continue;
    const kind = details?.type === "suite" ? "suite" : "test";
    yield `${JSON.stringify({ file, name, kind, reason: typeof skip === "string" ? skip : "" })}\n`;
  }
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const counted = (items) => {
  const suites = items.filter((s) => s.kind === "suite").length;
  const tests = items.length - suites;
  return [tests && plural(tests, "test"), suites && plural(suites, "suite")].filter(Boolean).join(" and ");
};

/**
 * The summary of the skips in `logFile` (lines to print, each a TAP comment)
 * and the failures: under `required` (the pieces .ci/install enabled), a skip
 * for one of them, a skip that names no piece, or a required key that is no piece.
 */
export function summarizeSkips({ logFile, root, missingPieceOf, knownPieces, required }) {
  const skips = existsSync(logFile)
    ? readFileSync(logFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
  const failures = [];
  for (const key of required ?? []) {
    if (!knownPieces.includes(key))
      failures.push(`"${key}" in the enabled pieces is none of: ${knownPieces.join(", ")}`);
  }
  if (skips.length === 0) return { lines: ["# skip summary: nothing skipped"], failures };
  const groups = new Map();
  for (const skip of skips) {
    const found = missingPieceOf(skip.reason);
    const piece = found?.piece ?? "(no piece named)";
    const group = groups.get(piece) ?? { items: [], details: new Set() };
    group.items.push(skip);
    group.details.add(found?.detail ?? (skip.reason || "no reason given"));
    groups.set(piece, group);
  }
  const lines = [
    `# skip summary: ${counted(skips)} skipped` +
      (skips.some((s) => s.kind === "suite")
        ? " (the tests inside a skipped suite are not run, so not counted)"
        : ""),
  ];
  for (const [piece, { items, details }] of groups) {
    lines.push(`#   ${piece}: ${counted(items)}: ${[...details].join("; ")}`);
    for (const s of items)
      lines.push(`#     ${s.file ? relative(root, s.file) : "?"}: ${s.kind} "${s.name}"`);
    if (required?.includes(piece))
      failures.push(`.ci/install enabled ${piece}, yet ${counted(items)} skipped for want of it`);
    else if (required && !knownPieces.includes(piece))
      failures.push(
        `${counted(items)} skipped naming no piece: give the reason as needs(piece, detail) from @svc/engine/testing`,
      );
  }
  return { lines, failures };
}
