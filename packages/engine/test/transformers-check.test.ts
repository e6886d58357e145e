// The engine against transformers and peft themselves, where a Python with
// both (and torch) is installed: reference/check_transformers.py builds every
// fixture case with transformers' own classes, saves it with save_pretrained
// and records transformers' outputs; golden.test.ts then checks the engine on
// those folders (SVC_GOLDEN_DIR). SVC_TRANSFORMERS_PYTHON names the Python
// (default: python3 on PATH); without the libraries the test is skipped.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { needs } from "../src/testing/missing-piece.js";

const here = dirname(fileURLToPath(import.meta.url));
const reference = join(here, "..", "..", "reference");
const python = process.env.SVC_TRANSFORMERS_PYTHON ?? "python3";

function librariesMissing(): string | null {
  const probe = spawnSync(
    python,
    ["-c", "import torch, transformers, peft; print(transformers.__version__)"],
    {
      encoding: "utf8",
    },
  );
  if (probe.status !== 0) return `${python} has no torch, transformers and peft`;
  if (!probe.stdout.trim().startsWith("5."))
    return `${python} has transformers ${probe.stdout.trim()}, not 5.x`;
  return null;
}

test("models saved by transformers itself load and match its logits, gradients and greedy tokens", (t) => {
  const missing = librariesMissing();
  if (missing) {
    t.skip(needs("transformers/peft", missing));
    return;
  }
  const out = mkdtempSync(join(tmpdir(), "svc-transformers-"));
  try {
    const check = spawnSync(python, [join(reference, "check_transformers.py"), out], {
      encoding: "utf8",
      cwd: reference,
      timeout: 900_000,
    });
    const summary = /(\d+) passed, (\d+) failed/.exec(check.stdout + check.stderr);
    assert.ok(summary, `check_transformers.py printed no summary:\n${check.stderr.slice(-2000)}`);
    assert.equal(check.status, 0, check.stdout.slice(-3000));
    assert.equal(summary[2], "0");

    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const golden = spawnSync(
      process.execPath,
      ["--test", "--test-reporter=tap", join(here, "golden.test.js")],
      { encoding: "utf8", env: { ...env, SVC_GOLDEN_DIR: out } },
    );
    const output = `${golden.stdout}${golden.stderr}`;
    assert.equal(golden.status, 0, output.slice(-3000));
    assert.match(output, /# fail 0/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
