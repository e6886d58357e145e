#!/usr/bin/env node
// Training and decode speed of @svc/engine against PyTorch on this machine.
//
//   npm run build && nice node bench/engine.mjs [--shape tiny|small|both] [--steps N] [--decode-tokens N]
//
// Both engines train Llama + LoRA (r=16, alpha=32, all seven projections),
// fp32, AdamW with gradient clipping, on random token batches with every
// position labelled (like-for-like: the engine computes the LM head for every
// row, as PyTorch does), then greedy-decode at batch 1 with a KV cache.
// PyTorch runs bench/reference_torch.py with /usr/bin/python3 and 2 threads.
// Each engine runs in its own process so peak RSS is its own.
// SVC_ENGINE_PROFILE=1 prints the engine's per-op times.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "packages", "engine", "dist", "src");

const SHAPES = {
  tiny: { hidden: 256, layers: 4, heads: 4, kv: 4, ffn: 688, vocab: 4096, tied: false, seq: 256, batch: 8 },
  small: {
    hidden: 576,
    layers: 30,
    heads: 9,
    kv: 3,
    ffn: 1536,
    vocab: 49152,
    tied: true,
    seq: 256,
    batch: 4,
  },
};

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

async function engineWorker(shapeName, steps, decodeTokens) {
  const { LlamaGraph, profile } = await import(join(dist, "model.js"));
  const { initLoraAdapter, loraLayersOf, loraParams, zerosLike } = await import(join(dist, "lora.js"));
  const { AdamW, clipGradNorm } = await import(join(dist, "optim.js"));
  const { makeBatch } = await import(join(dist, "batching.js"));
  const { LlamaModel } = await import(join(dist, "load.js"));
  const { loadTokenizer } = await import(join(dist, "tokenizer.js"));
  const { writeTestTokenizer } = await import(join(dist, "testing", "test-tokenizer.js"));
  const { createGenerator } = await import(join(dist, "generate.js"));
  const { getKernels } = await import(join(dist, "kernels", "index.js"));
  const { Rng } = await import(join(dist, "rng.js"));
  const { ALL_LORA_TARGETS } = await import(join(dist, "types.js"));

  const s = SHAPES[shapeName];
  const D = s.hidden / s.heads;
  const config = {
    hiddenSize: s.hidden,
    intermediateSize: s.ffn,
    numHiddenLayers: s.layers,
    numAttentionHeads: s.heads,
    numKeyValueHeads: s.kv,
    headDim: D,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    vocabSize: s.vocab,
    tieWordEmbeddings: s.tied,
    maxPositionEmbeddings: 4096,
  };
  const rng = new Rng(0);
  const rand = (n, scale = 0.035) => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = (2 * rng.next() - 1) * scale;
    return out;
  };
  const ones = (n) => new Float32Array(n).fill(1);
  const C = s.hidden;
  const Q = s.heads * D;
  const K = s.kv * D;
  const embed = rand(s.vocab * C);
  const weights = {
    embed,
    layers: Array.from({ length: s.layers }, () => ({
      inputNorm: ones(C),
      q: rand(Q * C),
      k: rand(K * C),
      v: rand(K * C),
      o: rand(C * Q),
      postNorm: ones(C),
      gate: rand(s.ffn * C),
      up: rand(s.ffn * C),
      down: rand(C * s.ffn),
    })),
    finalNorm: ones(C),
    lmHead: s.tied ? embed : rand(s.vocab * C),
  };
  const adapter = initLoraAdapter(config, { r: 16, alpha: 32, targetModules: [...ALL_LORA_TARGETS] }, 1);
  const lora = loraLayersOf(adapter, config);
  const grads = zerosLike(lora);
  const params = loraParams(lora);
  const gradList = loraParams(grads);
  const optimizer = new AdamW(params, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
  const skip = process.env.BENCH_SKIP_UNLABELED === "1";
  const graph = new LlamaGraph(config, weights, { skipUnlabeledRows: skip });

  const examples = Array.from({ length: s.batch }, () => {
    const ids = Int32Array.from({ length: s.seq }, () => rng.int(s.vocab));
    return { inputIds: ids, labels: ids };
  });
  const batch = makeBatch(examples, 0);
  let count = 0;
  for (const t of batch.targets) if (t >= 0) count++;
  const step = () => {
    const { lossSum } = graph.forward(batch, lora, 1 / count);
    graph.backward(lora, grads);
    clipGradNorm(gradList, 1.0);
    optimizer.update(gradList, 2e-4);
    for (const g of gradList) g.fill(0);
    return lossSum / count;
  };
  step(); // warm-up: allocates the activations once
  profile.clear();
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  const trainSeconds = (performance.now() - t0) / 1000;
  const profileRows = [...profile.entries()].sort((a, b) => b[1].ms - a[1].ms);

  // decode at batch 1 through the generator (KV cache), timed from the first token to the last
  const tokDir = mkdtempSync(join(tmpdir(), "svc-bench-tok-"));
  await writeTestTokenizer(tokDir);
  const tokenizer = await loadTokenizer(tokDir);
  const model = new LlamaModel(tokDir, config, weights, tokenizer, null, { graph: null });
  const generator = createGenerator(model);
  const stamps = [];
  const prompt = Array.from(examples[0].inputIds.subarray(0, 16));
  for await (const _ of generator.generate({
    promptIds: prompt,
    maxTokens: decodeTokens + 1,
    temperature: 0,
  })) {
    stamps.push(performance.now());
  }
  const decodeSeconds = (stamps[stamps.length - 1] - stamps[0]) / 1000;
  const k = getKernels();
  return {
    engine: "svc",
    kernels: `${k.name}/${k.isa}`,
    skipUnlabeledRows: skip,
    train_tokens_per_s: (s.batch * s.seq * steps) / trainSeconds,
    train_step_s: trainSeconds / steps,
    decode_tokens_per_s: (stamps.length - 1) / decodeSeconds,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
    profile: profileRows.map(([label, v]) => [label, Math.round(v.ms / steps), v.calls / steps]),
  };
}

function runChild(command, args) {
  const child = spawnSync(command, args, { encoding: "utf8", maxBuffer: 1 << 24 });
  if (child.status !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${child.stderr}`);
  const line = child.stdout.trim().split("\n").pop();
  return JSON.parse(line);
}

const worker = option("worker");
if (worker) {
  const result = await engineWorker(worker, Number(option("steps")), Number(option("decode-tokens")));
  console.log(JSON.stringify(result));
} else {
  const shapeArg = option("shape", "both");
  const names = shapeArg === "both" ? ["tiny", "small"] : [shapeArg];
  for (const name of names) {
    const steps = option("steps", name === "tiny" ? "5" : "2");
    const decodeTokens = option("decode-tokens", "32");
    const torch = process.argv.includes("--skip-torch")
      ? null
      : runChild("/usr/bin/python3", [
          join(here, "reference_torch.py"),
          "--shape",
          name,
          "--steps",
          steps,
          "--decode-tokens",
          decodeTokens,
        ]);
    const svc = runChild(process.execPath, [
      fileURLToPath(import.meta.url),
      "--worker",
      name,
      "--steps",
      steps,
      "--decode-tokens",
      decodeTokens,
    ]);
    const ratio = (a, b) => (b ? (a / b).toFixed(2) : "-");
    const f = (v) => (v === undefined ? "-" : v.toFixed(1));
    console.log(`\n${name} shape ${JSON.stringify(SHAPES[name])}, svc kernels ${svc.kernels}`);
    console.log("                      svc      pytorch    ratio");
    console.log(
      `train tokens/s   ${f(svc.train_tokens_per_s).padStart(9)} ${f(torch?.train_tokens_per_s).padStart(10)} ${ratio(svc.train_tokens_per_s, torch?.train_tokens_per_s).padStart(8)}`,
    );
    console.log(
      `decode tokens/s  ${f(svc.decode_tokens_per_s).padStart(9)} ${f(torch?.decode_tokens_per_s).padStart(10)} ${ratio(svc.decode_tokens_per_s, torch?.decode_tokens_per_s).padStart(8)}`,
    );
    console.log(`peak RSS MB      ${f(svc.peak_rss_mb).padStart(9)} ${f(torch?.peak_rss_mb).padStart(10)}`);
    if (svc.profile.length > 0) {
      console.log("engine ms per training step by op:");
      for (const [label, ms, calls] of svc.profile)
        console.log(`  ${label.padEnd(28)} ${String(ms).padStart(7)} ms  ${calls} calls`);
    }
  }
}
