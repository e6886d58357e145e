#!/usr/bin/env node
// Training and decode speed of @svc/engine against PyTorch on this machine,
// per model shape (bench/shapes.mjs), with the effective GFLOP/s of a training
// step against the best native SGEMM measured in the same run.
//
//   npm run build && nice node bench/engine.mjs [--shape tiny,small,qwen,gemma] [--repeat N]
//       [--steps N] [--decode-tokens N] [--decode-reps N] [--skip-torch] [--sgemm-budget S]
//       [--precision fp32|bf16] [--peer transformers|torch1] [--json]
//
// --precision bf16 trains on bf16 base weights (docs/training-precision.md),
// built layer by layer so the process never holds the fp32 model, and rates
// the step against the best bf16 GEMM (matmulQuantTrain) instead of SGEMM.
// --peer transformers (the default where python3 on PATH has torch 2.x,
// transformers and peft): bench/transformers_peer.py, LoRA r16/alpha32 on all
// linear layers, AdamW, two threads, bf16 autocast when --precision bf16,
// its versions printed; it trains only (no decode). --peer torch1: Debian's
// PyTorch 1.13 (/usr/bin/python3 bench/reference_torch.py, fp32), as before.
// --json: one JSON object per shape at the end (shape, precision,
// trainTokensPerSecond, peerTokensPerSecond, peakRssMb, percentOfPeak).
//
// Both engines build the model from the same config.json object (the engine
// with parseModelConfig, PyTorch with the repo's reference configs.parse), put
// LoRA (r=16, alpha=32, "all-linear") on it, train fp32 with AdamW and
// gradient clipping on random token batches with every position labelled
// (like-for-like: the engine computes the LM head for every row, as PyTorch
// does), then greedy-decode at batch 1 with a KV cache. PyTorch runs
// bench/reference_torch.py with /usr/bin/python3 and 2 threads. Each engine
// runs in its own process, so peak RSS is its own; with --repeat N the two
// alternate N times and every figure is the median over the rounds (each round
// runs every shape, so the shapes' ratios see the same load).
// SVC_ENGINE_PROFILE=1 prints the engine's per-op times (=cpu: CPU time, which
// a busy machine disturbs less; with SVC_THREADS=1 each op's own cost); SVC_BENCH_ENGINE=dir
// runs another build of the engine package (default packages/engine).
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { engineWorker, LORA, median, PROMPT } from "./engine-worker.mjs";
import { SHAPES, trainStepFlops } from "./shapes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const engineRoot = process.env.SVC_BENCH_ENGINE ?? join(here, "..", "packages", "engine");
const dist = join(engineRoot, "dist", "src");

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** A figure to one decimal, or "-" where there is none (--decode-tokens 0, --skip-torch). */
const fixed = (v, d = 1) => (v === undefined || v === null ? "-" : v.toFixed(d));

function runChild(command, args) {
  const child = spawnSync(command, args, { encoding: "utf8", maxBuffer: 1 << 26 });
  if (child.status !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${child.stderr}`);
  return JSON.parse(child.stdout.trim().split("\n").pop());
}

const worker = option("worker");
if (worker) {
  const result = await engineWorker(
    dist,
    worker,
    Number(option("steps")),
    Number(option("decode-tokens")),
    Number(option("decode-reps")),
    Number(option("sgemm-budget")),
    option("precision", "fp32"),
  );
  console.log(JSON.stringify(result));
} else {
  const { parseModelConfig } = await import(join(dist, "families", "index.js"));
  const shapeArg = option("shape", "tiny,small,qwen,gemma");
  const names =
    shapeArg === "both" ? ["tiny", "small"] : shapeArg === "all" ? Object.keys(SHAPES) : shapeArg.split(",");
  for (const name of names)
    if (!SHAPES[name]) throw new Error(`unknown shape ${name} (${Object.keys(SHAPES).join(", ")})`);
  const repeat = Number(option("repeat", "1"));
  const decodeTokens = option("decode-tokens", "32");
  const decodeReps = option("decode-reps", "3");
  const sgemmBudget = option("sgemm-budget", "0.5");
  const withTorch = !process.argv.includes("--skip-torch");
  const precision = option("precision", "fp32");
  if (precision !== "fp32" && precision !== "bf16")
    throw new Error(`--precision must be fp32 or bf16, got ${precision}`);
  const peerProbe = () =>
    spawnSync("python3", [
      "-c",
      "import torch, transformers, peft; assert int(torch.__version__.split('.')[0]) >= 2",
    ]).status === 0;
  const peer = option("peer", withTorch && peerProbe() ? "transformers" : "torch1");
  if (peer !== "transformers" && peer !== "torch1")
    throw new Error(`--peer must be transformers or torch1, got ${peer}`);
  if (peer === "torch1" && precision === "bf16" && withTorch)
    console.log("note: the torch1 peer trains fp32; --peer transformers gives it bf16 autocast");
  const asJson = process.argv.includes("--json");
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(1))
      .join(" ");
  console.log(`node ${process.version}; load average ${load()} at the start`);
  const summary = [];
  const stepsOf = (name) => option("steps", { tiny: "5", small: "2" }[name] ?? "1");
  // rounds outermost: every shape sees the same drift of the machine's load
  const roundsOf = new Map(names.map((name) => [name, []]));
  for (let round = 0; round < repeat; round++) {
    for (const name of names) {
      const shape = SHAPES[name];
      const steps = stepsOf(name);
      const torch = !withTorch
        ? null
        : peer === "transformers"
          ? runChild("python3", [
              join(here, "transformers_peer.py"),
              JSON.stringify({
                config: shape.config,
                batch: shape.batch,
                seq: shape.seq,
                steps: Number(steps),
                warmup: 1,
                ...LORA,
                threads: 2,
                precision,
              }),
            ])
          : runChild("/usr/bin/python3", [
              join(here, "reference_torch.py"),
              JSON.stringify({
                config: shape.config,
                batch: shape.batch,
                seq: shape.seq,
                steps: Number(steps),
                warmup: 1,
                decode_tokens: Number(decodeTokens),
                prompt: PROMPT,
                reps: Number(decodeReps),
                ...LORA,
                threads: 2,
              }),
            ]);
      if (torch?.versions && round === 0)
        console.log(`peer ${name}: ${JSON.stringify(torch.versions)}, ${torch.precision}`);
      if (torch) torch.decode_tokens_per_s = torch.decode_runs ? median(torch.decode_runs) : undefined;
      const svc = runChild(process.execPath, [
        fileURLToPath(import.meta.url),
        "--worker",
        name,
        "--steps",
        steps,
        "--decode-tokens",
        decodeTokens,
        "--decode-reps",
        decodeReps,
        "--sgemm-budget",
        sgemmBudget,
        "--precision",
        precision,
      ]);
      roundsOf.get(name).push({ svc, torch, load: loadavg()[0] });
      console.log(
        `${name} round ${round + 1}/${repeat}: train ${fixed(svc.train_tokens_per_s)} vs ${fixed(torch?.train_tokens_per_s)} tok/s, decode ${fixed(svc.decode_tokens_per_s)} vs ${fixed(torch?.decode_tokens_per_s)} tok/s; load ${load()}`,
      );
    }
  }
  for (const name of names) {
    const shape = SHAPES[name];
    const rounds = roundsOf.get(name);
    const svcOf = (key) => median(rounds.map((r) => r.svc[key]));
    const torchOf = (key) => median(rounds.map((r) => r.torch?.[key]));
    const pairRatio = (key) =>
      median(rounds.map((r) => (r.torch?.[key] ? r.svc[key] / r.torch[key] : undefined)));
    const config = parseModelConfig(shape.config);
    const flops = trainStepFlops(config, shape.batch, shape.seq, LORA.r);
    const stepS = svcOf("train_step_s");
    const effective = flops.total / stepS / 1e9;
    // each round's effective rate against the best SGEMM of the same process (same load), then medians
    const gemmBest = new Map();
    for (const r of rounds)
      for (const [label, g] of r.svc.sgemm) gemmBest.set(label, Math.max(gemmBest.get(label) ?? 0, g));
    const perRound = rounds.map((r) => {
      const eff = flops.total / r.svc.train_step_s / 1e9;
      const sg = Math.max(0, ...r.svc.sgemm.map(([, g]) => g));
      return { eff, sg, of: sg ? eff / sg : undefined };
    });
    const bestSgemm = median(perRound.map((p) => p.sg));
    const torchEffective = withTorch ? flops.total / torchOf("train_step_s") / 1e9 : undefined;
    const row = {
      name,
      note: shape.note,
      kernels: rounds[0].svc.kernels,
      precision: rounds[0].svc.precision,
      trainSvc: svcOf("train_tokens_per_s"),
      trainTorch: torchOf("train_tokens_per_s"),
      trainRatio: pairRatio("train_tokens_per_s"),
      decodeSvc: svcOf("decode_tokens_per_s"),
      decodeTorch: torchOf("decode_tokens_per_s"),
      decodeRatio: pairRatio("decode_tokens_per_s"),
      rssSvc: svcOf("peak_rss_mb"),
      rssTorch: torchOf("peak_rss_mb"),
      stepS,
      gflop: flops.total / 1e9,
      effective,
      torchEffective,
      bestSgemm,
      ofSgemm: median(perRound.map((p) => p.of)),
    };
    summary.push(row);

    const f = fixed;
    console.log(
      `\n${name}: ${shape.note}; batch ${shape.batch} x seq ${shape.seq}; svc kernels ${row.kernels}; medians of ${repeat} round(s)`,
    );
    console.log("                      svc      pytorch    ratio");
    console.log(
      `train tokens/s   ${f(row.trainSvc).padStart(9)} ${f(row.trainTorch).padStart(10)} ${f(row.trainRatio, 2).padStart(8)}`,
    );
    console.log(
      `decode tokens/s  ${f(row.decodeSvc).padStart(9)} ${f(row.decodeTorch).padStart(10)} ${f(row.decodeRatio, 2).padStart(8)}`,
    );
    console.log(`peak RSS MB      ${f(row.rssSvc, 0).padStart(9)} ${f(row.rssTorch, 0).padStart(10)}`);
    const parts = ["base", "inputGrad", "attention", "lmHead", "lora"].map(
      (key) => `${key} ${(flops[key] / 1e9).toFixed(1)}`,
    );
    console.log(`training step: ${row.gflop.toFixed(1)} GFLOP (${parts.join(", ")}), ${stepS.toFixed(3)} s`);
    console.log(
      `effective ${f(effective)} GFLOP/s (PyTorch ${f(torchEffective)}); best ${row.precision === "bf16" ? "bf16-weight GEMM" : "native SGEMM"} ${f(bestSgemm)} GFLOP/s; ${f(100 * row.ofSgemm, 0)}% of it (medians over rounds)`,
    );
    console.log(
      `per round: ${perRound.map((p) => `${f(p.eff)} of ${f(p.sg)} GFLOP/s (${f(100 * p.of, 0)}%)`).join("; ")}`,
    );
    for (const [label, g] of gemmBest)
      console.log(
        `  ${row.precision === "bf16" ? "bf16 GEMM" : "SGEMM"} ${label.padEnd(34)} ${g.toFixed(1).padStart(7)} GFLOP/s (best round)`,
      );
    const profileRows = rounds[0].svc.profile;
    if (profileRows.length > 0) {
      console.log("engine ms per training step by op (first round):");
      for (const [label, ms, calls] of profileRows)
        console.log(`  ${label.padEnd(28)} ${ms.toFixed(1).padStart(9)} ms  ${calls} calls`);
    }
  }

  if (asJson)
    for (const r of summary)
      console.log(
        JSON.stringify({
          shape: r.name,
          precision: r.precision,
          peer: withTorch ? peer : null,
          trainTokensPerSecond: r.trainSvc,
          peerTokensPerSecond: r.trainTorch ?? null,
          peakRssMb: r.rssSvc,
          peerPeakRssMb: r.rssTorch ?? null,
          percentOfPeak: r.ofSgemm === undefined ? null : 100 * r.ofSgemm,
        }),
      );
  const f = (v, d = 1) => (v === undefined || v === null ? "-" : v.toFixed(d));
  const small = summary.find((r) => r.name === "small");
  console.log(`\nsummary (medians; load average ${load()} at the end)`);
  console.log(
    "| shape | precision | train tok/s svc | train tok/s PyTorch | ratio | vs small's ratio | decode tok/s svc | decode tok/s PyTorch | ratio | peak RSS svc / PyTorch | GFLOP/step | effective GFLOP/s | best GEMM (SGEMM; bf16-weight GEMM in bf16) | % of it |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const r of summary) {
    const vsSmall =
      small?.trainRatio && r.trainRatio ? `${f((100 * r.trainRatio) / small.trainRatio, 0)}%` : "-";
    console.log(
      `| ${r.name} | ${r.precision} | ${f(r.trainSvc)} | ${f(r.trainTorch)} | ${f(r.trainRatio, 2)}× | ${vsSmall} | ${f(r.decodeSvc)} | ${f(r.decodeTorch)} | ${f(r.decodeRatio, 2)}× | ${f(r.rssSvc, 0)} MB / ${f(r.rssTorch, 0)} MB | ${f(r.gflop)} | ${f(r.effective)} | ${f(r.bestSgemm)} | ${f(100 * r.ofSgemm, 0)}% |`,
    );
  }
}
