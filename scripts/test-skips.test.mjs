// The skip reporter and summary of scripts/test.mjs, on a real `node --test`
// run of a file that skips a suite, a test and a test at run time.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MISSING_PIECES, missingPieceOf, needs } from "@svc/engine/testing";
import { summarizeSkips } from "./test-skips.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { NODE_TEST_CONTEXT: _, ...withoutTestContext } = process.env;

function runSkipping() {
  const dir = mkdtempSync(join(tmpdir(), "svc-skips-"));
  const file = join(dir, "skipping.test.mjs");
  const reason = (piece, detail) => JSON.stringify(needs(piece, detail));
  writeFileSync(
    file,
    `import { describe, it, test } from "node:test";
describe("llama suite", { skip: ${reason("llama.cpp package", "not installed")} }, () => { it("inner", () => {}); });
test("torch test", { skip: ${reason("torch", "no torch")} }, () => {});
test("at run time", (t) => t.skip(${reason("torch", "still no torch")}));
test("unnamed", { skip: "just because" }, () => {});
test("runs", () => {});
`,
  );
  const log = join(dir, "skips.jsonl");
  const run = spawnSync(
    process.execPath,
    [
      "--test",
      `--test-reporter=${pathToFileURL(join(here, "test-skips.mjs")).href}`,
      `--test-reporter-destination=${log}`,
      file,
    ],
    // not as a child of this test run (which would take its reports instead of the reporter)
    { encoding: "utf8", env: withoutTestContext },
  );
  assert.equal(run.status, 0, run.stderr);
  return { dir, log };
}

test("skips are counted by the missing piece their reason names, each skip listed", () => {
  const { dir, log } = runSkipping();
  try {
    const summary = (required) =>
      summarizeSkips({ logFile: log, root: dir, missingPieceOf, knownPieces: MISSING_PIECES, required });
    const { lines, failures } = summary(null);
    assert.deepEqual(failures, []);
    assert.equal(
      lines[0],
      "# skip summary: 3 tests and 1 suite skipped (the tests inside a skipped suite are not run, so not counted)",
    );
    assert.ok(lines.includes("#   llama.cpp package: 1 suite: not installed"), lines.join("\n"));
    assert.ok(lines.includes("#   torch: 2 tests: no torch; still no torch"), lines.join("\n"));
    assert.ok(lines.includes('#     skipping.test.mjs: test "at run time"'), lines.join("\n"));
    assert.ok(lines.includes("#   (no piece named): 1 test: just because"), lines.join("\n"));
    assert.ok(!lines.some((l) => l.includes('"runs"') || l.includes('"inner"')), lines.join("\n"));

    // Under CI: an enabled piece that was skipped, a skip naming no piece, and an unknown key all fail.
    assert.deepEqual(summary(["torch", "Chromium", "pytorch"]).failures, [
      '"pytorch" in the enabled pieces is none of: ' + MISSING_PIECES.join(", "),
      ".ci/install enabled torch, yet 2 tests skipped for want of it",
      "1 test skipped naming no piece: give the reason as needs(piece, detail) from @svc/engine/testing",
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a run that skipped nothing says so", () => {
  const none = join(tmpdir(), `svc-no-skips-${process.pid}.jsonl`);
  const { lines, failures } = summarizeSkips({
    logFile: none,
    root: "/",
    missingPieceOf,
    knownPieces: MISSING_PIECES,
    required: ["torch"],
  });
  assert.deepEqual(lines, ["# skip summary: nothing skipped"]);
  assert.deepEqual(failures, []);
});
