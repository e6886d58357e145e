// SGEMM throughput of the engine's kernels against PyTorch in the same run:
// GFLOP/s for the training, LoRA and decode shapes of the two benchmark models,
// for the native addon at each ISA this CPU runs, the portable kernels, and
// torch.matmul (bench/kernels_torch.py, 2 threads). Each figure is the best of
// repeated runs, taken in several rounds over all cells (ours and PyTorch's
// alternating), so a burst of background load depresses no cell for long.
//
//   npm run build && nice -n 10 node bench/kernels.mjs [--budget 0.2] [--rounds 3] [--no-torch] [--portable-max-gflop 3]
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadNativeKernels, loadPortableKernels } from "../packages/engine/dist/src/kernels/index.js";

const here = dirname(fileURLToPath(import.meta.url));

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

function torchRound() {
  const r = spawnSync("/usr/bin/python3", [join(here, "kernels_torch.py"), "2", String(budget)], {
    input: JSON.stringify(SHAPES),
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
