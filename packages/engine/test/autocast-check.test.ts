// bf16 training's numerics against PyTorch 2.x's bf16 autocast on the CPU, the
// way the field trains in bf16: the same random model folder, the same token
// rows, the mean next-token loss in fp32 and in bf16 on both sides
// (reference/autocast_loss.py). svc's bf16 loss must sit as close to
// autocast's as autocast itself sits to fp32 (twice that, plus 2e-4 of the
// loss for the fp32 noise). SVC_TRANSFORMERS_PYTHON names the Python (default
// python3 on PATH); without torch ≥ 2.7 and transformers it is skipped.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ModelGraph } from "../src/graph/model.js";
import { getKernels } from "../src/kernels/index.js";
import { loadModel } from "../src/loading/load.js";
import { Rng } from "../src/rng.js";
import { needs } from "../src/testing/missing-piece.js";
import { createRandomModel } from "../src/testing/random-model.js";
import { graphPrecision, resolvePrecision, trainingWeights } from "../src/training/train-precision.js";

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, "..", "..", "reference", "autocast_loss.py");
const python = process.env.SVC_TRANSFORMERS_PYTHON ?? "python3";

function librariesMissing(): string | null {
  const probe = spawnSync(python, ["-c", "import torch, transformers; print(torch.__version__)"], {
    encoding: "utf8",
  });
  if (probe.status !== 0) return `${python} has no torch and transformers`;
  const [major, minor] = probe.stdout.trim().split(".").map(Number);
  if (!(major > 2 || (major === 2 && minor >= 7))) return `${python} has torch ${probe.stdout.trim()}`;
  return null;
}

test("bf16: the loss of a random model against PyTorch's bf16 autocast, within autocast's own distance from fp32", async (t) => {
  const missing = librariesMissing();
  if (missing) {
    t.skip(needs("torch ≥ 2.7", missing));
    return;
  }
  const root = mkdtempSync(join(tmpdir(), "svc-autocast-"));
  try {
    const dir = join(root, "model");
    await createRandomModel(dir, {
      hiddenSize: 64,
      intermediateSize: 160,
      numHiddenLayers: 3,
      std: 0.1,
      embedStd: 0.5,
      seed: 11,
    });
    const model = await loadModel(dir);
    const V = model.config.vocabSize;
    const B = 2;
    const T = 48; // 96 rows: the native kernels' bf16 GEMM, not their GEMV
    const rng = new Rng(5);
    const rows = Array.from({ length: B }, () => Array.from({ length: T }, () => Math.floor(rng.next() * V)));
    const inputIds = Int32Array.from(rows.flat());
    const targets = new Int32Array(B * T);
    for (let b = 0; b < B; b++)
      for (let i = 0; i < T; i++) targets[b * T + i] = i + 1 < T ? rows[b][i + 1] : -1;
    const batch = { B, T, inputIds, targets, lengths: Int32Array.of(T, T) };
    const loss = (precision: "fp32" | "bf16") => {
      // the weights and graph a training run of that precision builds (bf16: bf16 attention too)
      const resolved = resolvePrecision(precision, undefined, getKernels());
      const weights = trainingWeights(model.weights, model.config, resolved);
      const graph = new ModelGraph(model.config, weights, graphPrecision(resolved));
      const { lossSum, count } = graph.forward(batch, null);
      return lossSum / count;
    };
    const svc = { fp32: loss("fp32"), bf16: loss("bf16") };

    const run = spawnSync(python, [script, dir, JSON.stringify(rows)], {
      encoding: "utf8",
      timeout: 600_000,
    });
    assert.equal(run.status, 0, run.stderr.slice(-2000));
    const torch = JSON.parse(run.stdout.trim().split("\n").pop() as string);
    const autocastGap = Math.abs(torch.bf16_autocast - torch.fp32);
    const gap = Math.abs(svc.bf16 - torch.bf16_autocast);
    t.diagnostic(
      `torch ${torch.torch}, transformers ${torch.transformers}, kernels ${getKernels().isa} (bf16 dot products ${getKernels().bf16Dot === true}): ` +
        `fp32 svc ${svc.fp32.toFixed(6)} torch ${torch.fp32.toFixed(6)}; bf16 svc ${svc.bf16.toFixed(6)} autocast ${torch.bf16_autocast.toFixed(6)}; ` +
        `|svc bf16 − autocast| ${gap.toExponential(2)}, |autocast − fp32| ${autocastGap.toExponential(2)}, |svc bf16 − svc fp32| ${Math.abs(svc.bf16 - svc.fp32).toExponential(2)}`,
    );
    assert.ok(
      Math.abs(svc.fp32 - torch.fp32) <= 1e-4 * torch.fp32,
      `fp32: svc ${svc.fp32} torch ${torch.fp32}`,
    );
    assert.ok(
      gap <= 2 * autocastGap + 2e-4 * torch.fp32,
      `bf16: svc ${svc.bf16} autocast ${torch.bf16_autocast}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
