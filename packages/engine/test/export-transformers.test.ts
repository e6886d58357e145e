// Merged exports in transformers itself, where a Python with torch and
// transformers 5 is installed (SVC_TRANSFORMERS_PYTHON, default python3;
// skipped otherwise): every fixture family's merged folder loads with
// AutoModelForCausalLM.from_pretrained as it is, and its logits are the
// engine's logits of base + adapter.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { exportModel } from "../src/export/index.js";
import { loadModel } from "../src/loading/load.js";
import { needs } from "../src/testing/missing-piece.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "fixtures");
const python = process.env.SVC_TRANSFORMERS_PYTHON ?? "python3";
const PROMPT = [5, 40, 77, 100, 3, 250, 17, 60];
const FIXTURE_CASES = [
  "llama-llama3-v5-f16",
  "mistral-classic-f32",
  "qwen2-swa-v5-f32",
  "qwen3-v5-bf16",
  "gemma3-v5-f32",
  "phi3-mini-v5-f32",
  "phi4-mini-longrope-v5-f16",
  "smollm3-v5-f32",
  "olmo2-v5-f32",
  "granite-v5-bf16",
];

function missing(): string | false {
  const probe = spawnSync(python, ["-c", "import torch, transformers; print(transformers.__version__)"], {
    encoding: "utf8",
  });
  if (probe.status !== 0) return needs("transformers/peft", `${python} has no torch and transformers`);
  if (!probe.stdout.trim().startsWith("5."))
    return needs("transformers/peft", `${python} has transformers ${probe.stdout.trim()}, not 5.x`);
  return false;
}

const LOGITS = `
import json, sys, torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
model.eval()
with torch.no_grad():
    out = model(torch.tensor([json.loads(sys.argv[2])])).logits[0]
print(json.dumps(out.flatten().tolist()))
`;

describe("merged exports load in transformers with the logits of base + adapter", { skip: missing() }, () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-hf-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  for (const fixture of FIXTURE_CASES) {
    it(fixture, async () => {
      const base = join(FIXTURES, fixture);
      const out = join(root, fixture);
      await exportModel({
        baseDir: base,
        adapterDir: join(base, "adapter"),
        format: "merged",
        quant: "f32",
        out,
      });
      const want = (await loadModel(base, { adapter: join(base, "adapter") })).logits(PROMPT);
      const run = spawnSync(python, ["-c", LOGITS, out, JSON.stringify(PROMPT)], {
        encoding: "utf8",
        maxBuffer: 64 * 2 ** 20,
      });
      assert.equal(run.status, 0, run.stderr.slice(-2000));
      const got = JSON.parse(run.stdout.trim().split("\n").at(-1) as string) as number[];
      assert.equal(got.length, want.length);
      const scale = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - got[i]));
      assert.ok(diff <= 1e-4 * scale + 1e-5, `transformers' logits differ by ${diff}`);
    });
  }
});
