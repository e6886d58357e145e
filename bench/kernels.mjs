// SGEMM throughput of the engine's kernels against PyTorch in the same run:
// GFLOP/s for the training, LoRA and decode shapes of the two benchmark models,
// for the native addon at each ISA this CPU runs, the portable kernels, and
// torch.matmul (bench/kernels_torch.py, 2 threads). Each figure is the best of
// repeated runs, taken in several rounds over all cells (ours and PyTorch's
// alternating), so a burst of background load depresses no cell for long.
//
// Then the bf16 section (issue 38; --no-bf16 leaves it out): the machine's
// measured peaks, "bf16 dot-product peak" (AMX tiles' TDPBF16PS on the native
// amx unit of a CPU with AMX-BF16; else vdpbf16ps on every thread, native
// AVX-512 units of a CPU with AVX512_BF16; "none on this CPU (no AVX512_BF16)"
// elsewhere) and "fp32 FMA peak" (the best native unit's FMA), each unit's own
// on a line; then a table of the GFLOP/s of matmulQuantTrain on bf16 weights
// (what a `precision: "bf16"` step runs: AMX tiles or vdpbf16ps where the unit has them, W
// widened to fp32 elsewhere) for the training GEMMs of --bf16-shapes
// (shapes.mjs's trainingGemms plus q's input gradient, the LM head in the row
// chunks lm-head.ts runs), per column as above, torch.matmul on bf16 tensors
// (kernels_torch.py bf16, 2 threads), and the best native rate's and torch's
// percent of the peak (bf16 where the CPU has it, else fp32 FMA).
//
//   npm run build && nice -n 10 node bench/kernels.mjs [--budget 0.2] [--rounds 3] [--no-torch] [--portable-max-gflop 3]
//       [--no-bf16] [--bf16-shapes small,qwen] [--peak-seconds 1]
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadNativeKernels, loadPortableKernels } from "../packages/engine/dist/src/kernels/index.js";
import { SHAPES as MODEL_SHAPES, trainingGemms } from "./shapes.mjs";
import { bf16Gemm } from "./train-precision.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "packages", "engine", "dist", "src");

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const budget = Number(flag("budget", "0.2")); // seconds per cell per round
const rounds = Number(flag("rounds", "3"));
const portableMaxGflop = Number(flag("portable-max-gflop", "3"));
const withTorch = !process.argv.includes("--no-torch");

// [label, m, n, k, transA, transB]. Linear forward is x·Wᵀ (transB); its input
// gradient dY·W (plain); LoRA's A gradient dYᵀ·X (transA).
const SHAPES = [
  ["tiny qkvo fwd    2048x256x256 NT", 2048, 256, 256, false, true],
  ["tiny up fwd      2048x688x256 NT", 2048, 688, 256, false, true],
  ["tiny down fwd    2048x256x688 NT", 2048, 256, 688, false, true],
  ["tiny lm_head fwd 2048x4096x256 NT", 2048, 4096, 256, false, true],
  ["tiny lm_head dX  2048x256x4096 NN", 2048, 256, 4096, false, false],
  ["small q fwd      1024x576x576 NT", 1024, 576, 576, false, true],
  ["small up fwd     1024x1536x576 NT", 1024, 1536, 576, false, true],
  ["small down fwd   1024x576x1536 NT", 1024, 576, 1536, false, true],
  ["small up dX      1024x576x1536 NN", 1024, 576, 1536, false, false],
  ["small lm_head    1024x49152x576 NT", 1024, 49152, 576, false, true],
  ["small lm_head dX 1024x576x49152 NN", 1024, 576, 49152, false, false],
  ["lora x·Aᵀ        1024x16x576 NT", 1024, 16, 576, false, true],
  ["lora h·Bᵀ        1024x576x16 NT", 1024, 576, 16, false, true],
  ["lora dA          16x576x1024 TN", 16, 576, 1024, true, false],
  ["decode q         1x576x576 NT", 1, 576, 576, false, true],
  ["decode up        1x1536x576 NT", 1, 1536, 576, false, true],
  ["decode lm_head   1x49152x576 NT", 1, 49152, 576, false, true],
  ["decode batch 4   4x1536x576 NT", 4, 1536, 576, false, true],
];

function random(n) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.random() * 2 - 1;
  return a;
}

function gflops(kern, [, m, n, k, transA, transB]) {
  const a = random(m * k);
  const b = random(k * n);
  const c = new Float32Array(m * n);
  kern.matmul(a, b, c, m, n, k, transA, transB, false);
  let best = Number.POSITIVE_INFINITY;
  const start = performance.now();
  while (performance.now() - start < budget * 1000 || best === Number.POSITIVE_INFINITY) {
    const t0 = performance.now();
    kern.matmul(a, b, c, m, n, k, transA, transB, false);
    best = Math.min(best, performance.now() - t0);
  }
  return (2 * m * n * k) / (best / 1000) / 1e9;
}

const columns = []; // [name, kernels]
try {
  const native = loadNativeKernels();
  for (const isa of native.supportedIsas) columns.push([`native ${isa}`, loadNativeKernels({ isa })]);
  console.log(`native: ${native.threads} threads, ISAs ${native.supportedIsas.join(", ")}`);
} catch (err) {
  console.log(`native: unavailable (${err.message})`);
}
for (const isa of ["wasm-simd", "js"]) {
  try {
    columns.push([`portable ${isa}`, loadPortableKernels({ isa })]);
  } catch {}
}

// fp32: Debian's PyTorch 1.13 (/usr/bin/python3), as before; bf16: the python3
// on PATH (PyTorch 2.x where .ci/install put the transformers peer's wheels)
function torchRound(shapes = SHAPES, dtype = "fp32", python = "/usr/bin/python3") {
  const r = spawnSync(python, [join(here, "kernels_torch.py"), "2", String(budget), dtype], {
    input: JSON.stringify(shapes),
    encoding: "utf8",
  });
  if (r.status === 0) return JSON.parse(r.stdout);
  console.log(`torch: unavailable (${(r.stderr || r.error?.message || "").trim().split("\n").pop()})`);
  return null;
}

// best[shape][column] over all rounds; "torch" is a column too.
const best = SHAPES.map(() => new Map());
let torch = withTorch ? undefined : null;
for (let round = 0; round < rounds; round++) {
  for (const [s, shape] of SHAPES.entries()) {
    const flop = 2 * shape[1] * shape[2] * shape[3];
    for (const [name, kern] of columns) {
      if (name.startsWith("portable") && flop / 1e9 > portableMaxGflop) continue;
      best[s].set(name, Math.max(best[s].get(name) ?? 0, gflops(kern, shape)));
    }
  }
  if (torch !== null) {
    const t = torchRound();
    if (t) {
      torch = t;
      for (const [s, shape] of SHAPES.entries())
        best[s].set("torch", Math.max(best[s].get("torch") ?? 0, t.gflops[shape[0]]));
    } else torch = null;
  }
  console.log(`round ${round + 1}/${rounds} done`);
}
if (torch) console.log(`torch ${torch.version}, ${torch.threads} threads`);

const header = [
  "shape (m x n x k)",
  ...columns.map(([name]) => name),
  ...(torch ? ["torch", "best native / torch"] : []),
];
const rows = SHAPES.map((shape, s) => {
  const cells = [shape[0]];
  let bestNative = 0;
  for (const [name] of columns) {
    const g = best[s].get(name);
    if (name.startsWith("native") && g) bestNative = Math.max(bestNative, g);
    cells.push(g ? g.toFixed(1) : "-");
  }
  if (torch) {
    const t = best[s].get("torch");
    cells.push(t.toFixed(1), bestNative ? `${(bestNative / t).toFixed(2)}x` : "-");
  }
  return cells;
});

const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(" | ");
console.log(`\nSGEMM GFLOP/s (best of repeated runs, ${rounds} rounds of ${budget}s per cell)`);
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("-|-"));
for (const r of rows) console.log(line(r));

// ---- bf16 (issue 38) ----
if (!process.argv.includes("--no-bf16")) {
  const { parseModelConfig } = await import(join(dist, "families", "index.js"));
  const peakSeconds = Number(flag("peak-seconds", "1"));
  const torchPython = flag("torch-bf16-python", "python3");
  // the machine's peaks: the best over the native units, each unit's own printed
  const peak = { bf16: null, fp32: null };
  console.log(`\nmeasured peaks (GFLOP/s, every pool thread, ${peakSeconds}s each):`);
  for (const [name, kern] of columns) {
    if (!kern.peakGflops) continue;
    const unit = { bf16: kern.peakGflops("bf16", peakSeconds), fp32: kern.peakGflops("fp32", peakSeconds) };
    const show = (g) => (g === null ? "none" : g.toFixed(1));
    console.log(`  ${name}: bf16 dot product ${show(unit.bf16)}, fp32 FMA ${show(unit.fp32)}`);
    for (const kind of ["bf16", "fp32"])
      if (unit[kind] !== null && unit[kind] > (peak[kind] ?? 0)) peak[kind] = unit[kind];
  }
  console.log(
    peak.bf16 === null
      ? "bf16 dot-product peak: none on this CPU (no AVX512_BF16)"
      : `bf16 dot-product peak: ${peak.bf16.toFixed(1)} GFLOP/s`,
  );
  console.log(peak.fp32 === null ? "fp32 FMA peak: none" : `fp32 FMA peak: ${peak.fp32.toFixed(1)} GFLOP/s`);
  // a bf16 step's products run on AMX tiles or vdpbf16ps where the CPU has them, on fp32 FMAs (widened W) elsewhere
  const [peakKind, peakRate] = peak.bf16 !== null ? ["bf16", peak.bf16] : ["fp32 FMA", peak.fp32];

  const shapes = [];
  for (const name of flag("bf16-shapes", "small,qwen").split(",")) {
    const shape = MODEL_SHAPES[name];
    if (!shape)
      throw new Error(`--bf16-shapes: unknown shape ${name} (${Object.keys(MODEL_SHAPES).join(", ")})`);
    const config = parseModelConfig(shape.config);
    const N = shape.batch * shape.seq;
    // the LM head's rows per chunk, as lm-head.ts runs it: 2^23 logits, at least 512 rows
    const headRows = Math.max(1, Math.min(N, Math.max(512, Math.floor(2 ** 23 / config.vocabSize))));
    const Q = config.numAttentionHeads * config.headDim;
    const gemms = trainingGemms(config, shape.batch, shape.seq, headRows);
    gemms.splice(1, 0, [`q dX ${N}x${config.hiddenSize}x${Q} NN`, N, config.hiddenSize, Q, false, false]);
    for (const g of gemms) shapes.push([`${name} ${g[0]}`, ...g.slice(1)]);
  }
  const bestBf16 = shapes.map(() => new Map());
  let torchInfo = withTorch ? undefined : null;
  for (let round = 0; round < rounds; round++) {
    for (const [s, shape] of shapes.entries()) {
      const flop = 2 * shape[1] * shape[2] * shape[3];
      for (const [name, kern] of columns) {
        if (name.startsWith("portable") && flop / 1e9 > portableMaxGflop) continue;
        const g = await bf16Gemm(dist, kern, shape, budget);
        bestBf16[s].set(name, Math.max(bestBf16[s].get(name) ?? 0, g));
      }
    }
    if (torchInfo !== null) {
      const t = torchRound(shapes, "bf16", torchPython);
      if (t) {
        torchInfo = t;
        for (const [s, shape] of shapes.entries())
          bestBf16[s].set("torch", Math.max(bestBf16[s].get("torch") ?? 0, t.gflops[shape[0]]));
      } else torchInfo = null;
    }
    console.log(`bf16 round ${round + 1}/${rounds} done`);
  }
  if (torchInfo)
    console.log(`torch ${torchInfo.version} (${torchPython}), bf16, ${torchInfo.threads} threads`);
  const pct = (g) => (g && peakRate ? `${((100 * g) / peakRate).toFixed(0)}%` : "-");
  const head = [
    "shape (m x n x k)",
    ...columns.map(([name]) => name),
    "best native % of peak",
    ...(torchInfo ? ["torch bf16", "torch % of peak", "best native / torch"] : []),
  ];
  const body = shapes.map((shape, s) => {
    const cells = [shape[0]];
    let bestNative = 0;
    for (const [name] of columns) {
      const g = bestBf16[s].get(name);
      if (name.startsWith("native") && g) bestNative = Math.max(bestNative, g);
      cells.push(g ? g.toFixed(1) : "-");
    }
    cells.push(pct(bestNative));
    if (torchInfo) {
      const t = bestBf16[s].get("torch");
      cells.push(t.toFixed(1), pct(t), bestNative ? `${(bestNative / t).toFixed(2)}x` : "-");
    }
    return cells;
  });
  const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const cellsLine = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(" | ");
  console.log(
    `\nbf16-weight GEMM (matmulQuantTrain) GFLOP/s, best of ${rounds} rounds of ${budget}s per cell; peak: ${peakKind} ${peakRate ? peakRate.toFixed(1) : "-"} GFLOP/s`,
  );
  console.log(cellsLine(head));
  console.log(w.map((x) => "-".repeat(x)).join("-|-"));
  for (const r of body) console.log(cellsLine(r));
}
