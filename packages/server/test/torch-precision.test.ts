// A job's precision on the torch backend (docs/training-precision.md#the-torch-backend),
// through `svc server` and `svc worker --backend torch` (python3-torch on the
// CPU): "fp32", "auto", "bf16" and an int8 base train, and training.started
// reports what svc_trainer runs ("auto" is bf16 where PyTorch's CPU kernels
// have native bf16 dot products, AVX512_BF16 or AMX-BF16, and fp32 elsewhere).
// bf16 and int8's first-step losses are held to the fp32 run's on the same
// model and data.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadModel, prepareSets } from "@svc/engine";
import { needs } from "@svc/engine/testing";
import { TRAINER_TORCH_DIR, writeTorchJob } from "../src/worker/torch-job.js";
import {
  completedTorchLogs,
  FIXTURES,
  framesText,
  hasTorch,
  TORCH_PYTHON,
  torchCluster,
  torchScratch,
} from "./torch-harness.js";

it("the job file carries the job's precision and base weights for svc_trainer to resolve", async () => {
  const scratch = torchScratch("precision-file");
  const model = await loadModel(join(FIXTURES, "llama-llama3-v5-f16"));
  const rows = [
    {
      messages: [
        { role: "user" as const, content: "hi" },
        { role: "assistant" as const, content: "yo" },
      ],
    },
  ];
  const hyperparameters = { lora: { r: 4, alpha: 8, targetModules: ["all-linear"] }, maxSteps: 1 };
  const fileFor = (precision?: "fp32" | "bf16" | "auto", baseWeights?: "int8") => {
    const { file } = writeTorchJob(mkdtempSync(join(scratch, "job-")), {
      model,
      prepared: prepareSets(model.tokenizer, rows, undefined, hyperparameters),
      hyperparameters,
      outputDir: mkdtempSync(join(scratch, "out-")),
      resumeFrom: null,
      precision,
      baseWeights,
    });
    const job = JSON.parse(readFileSync(file, "utf8"));
    return { precision: job.precision, baseWeights: job.baseWeights };
  };
  assert.deepEqual(fileFor("fp32"), { precision: "fp32", baseWeights: undefined });
  assert.deepEqual(fileFor("bf16", "int8"), { precision: "bf16", baseWeights: "int8" });
  assert.deepEqual(fileFor("auto"), { precision: "auto", baseWeights: undefined });
  assert.deepEqual(
    fileFor(),
    { precision: undefined, baseWeights: undefined },
    "none: svc_trainer's rule from before precisions (bf16 on CUDA, fp32 on the CPU)",
  );
});

// svc_trainer/int8.py against PyTorch's own product with the dequantized weight: the same outputs and input
// gradients in fp32 and under the CPU's bf16 autocast, the weights within scale/2 of the originals.
const INT8_CHECK = `
import json, torch, torch.nn.functional as F
from svc_trainer.int8 import Int8Weight, dequantize
torch.manual_seed(0)
w = torch.randn(48, 32)
m = Int8Weight(w)
wd = dequantize(m.q, m.scale, torch.float32)
out = {"q": str(m.q.dtype), "scale": str(m.scale.dtype), "within": bool((wd - w).abs().max() <= m.scale.max() / 2 + 1e-6)}
for ac in (False, True):
    x = torch.randn(3, 5, 32, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ac):
        y, y2 = m.linear(x), F.linear(x2, wd)
    dy = torch.randn(y.shape)
    (y.float() * dy).sum().backward()
    (y2.float() * dy).sum().backward()
    out["bf16" if ac else "fp32"] = [str(y.dtype), float((y.float() - y2.float()).abs().max()),
                                     float((x.grad - x2.grad).abs().max()), str(x.grad.dtype)]
print(json.dumps(out))
`;

it("svc_trainer's int8 weight computes PyTorch's product and input gradient with its dequantized values", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, () => {
  const run = spawnSync(TORCH_PYTHON, ["-c", INT8_CHECK], {
    cwd: TRAINER_TORCH_DIR,
    env: { ...process.env, PYTHONPATH: TRAINER_TORCH_DIR },
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.deepEqual(out, {
    q: "torch.int8",
    scale: "torch.float32",
    within: true,
    fp32: ["torch.float32", 0, 0, "torch.float32"],
    bf16: ["torch.bfloat16", 0, 0, "torch.float32"],
  });
});

/**
 * Whether PyTorch's CPU kernels have native bf16 dot products on this machine, read independently of
 * svc_trainer: the CPU's flags (avx512_bf16 or amx_bf16) and, where PyTorch reports it (2.0 and later),
 * an AVX-512 kernel capability.
 */
function nativeBf16(): boolean {
  let flags: string[] = [];
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((l) => l.startsWith("flags"));
    flags = line ? line.split(":")[1].trim().split(/\s+/) : [];
  } catch {}
  if (!flags.includes("avx512_bf16") && !flags.includes("amx_bf16")) return false;
  const probe = spawnSync(
    TORCH_PYTHON,
    [
      "-c",
      "import torch; c = getattr(torch.backends, 'cpu', None); print(c.get_cpu_capability() if c is not None and hasattr(c, 'get_cpu_capability') else '')",
    ],
    { encoding: "utf8" },
  );
  const capability = probe.stdout?.trim() ?? "";
  return capability === "" || capability.startsWith("AVX512");
}

describe("a job's precision on the torch backend", {
  skip: !hasTorch && needs("torch", `${TORCH_PYTHON} has no torch`),
}, () => {
  const cluster = torchCluster("torch-precision");

  // Tiny runs: PyTorch's bf16 on a CPU without AVX512_BF16 is emulated and many times slower than fp32.
  const firstLoss: Record<string, number> = {};
  const auto = nativeBf16() ? "bf16" : "fp32";
  const cases = [
    [{ precision: "fp32" }, "fp32", "fp32"],
    [{ precision: "auto" }, auto, auto],
    [{ precision: "bf16" }, "bf16", "bf16"],
    [{ precision: "fp32", baseWeights: "int8" }, "fp32", "int8"],
    [{ precision: "bf16", baseWeights: "int8" }, "bf16", "int8"],
  ] as const;

  it("fp32, auto, bf16 and int8-base jobs train on a CPU torch worker and report what ran", async () => {
    await cluster.startWorker(TORCH_PYTHON);
    for (const [asked, precision, baseWeights] of cases) {
      const created = await cluster.createTorchJob({ maxSteps: 2 }, asked);
      const frames = await cluster.eventsUntilEnd(created.id, 120_000);
      const logs = completedTorchLogs(frames, 2);
      const started = JSON.parse(frames[0].data);
      const label = JSON.stringify(asked);
      assert.equal(started.precision, precision, `${label} ${framesText(frames).slice(0, 2000)}`);
      assert.equal(started.baseWeights, baseWeights, label);
      firstLoss[label] = logs[0].loss;
    }
    // The same model, data and seed: the first step's loss differs only by the base's rounding and bf16's
    // products. Measured on the fixture: see docs/training-precision.md#the-torch-backend.
    const fp32 = firstLoss[JSON.stringify(cases[0][0])];
    const same = firstLoss[JSON.stringify({ precision: auto })];
    assert.equal(firstLoss[JSON.stringify(cases[1][0])], same, `"auto" is ${auto} here`);
    for (const [asked] of cases.slice(2)) {
      const loss = firstLoss[JSON.stringify(asked)];
      const gap = Math.abs(loss - fp32) / fp32;
      console.log(
        `# ${JSON.stringify(asked)}: first-step loss ${loss} against fp32 ${fp32}, ${gap.toExponential(2)} relative`,
      );
      assert.ok(gap > 0 && gap < 1e-3, `${JSON.stringify(asked)}: ${loss} vs fp32 ${fp32} (0: it ran fp32)`);
    }
  });
});
