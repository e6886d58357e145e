// Golden tests against PyTorch: fixtures/ written by reference/make_fixtures.py
// (the repo's reference on Debian's torch), and fixtures-transformers/ written
// by reference/check_transformers.py on a machine with transformers 5 and peft:
// models saved by transformers' save_pretrained, its own logits, gradients and
// greedy tokens, and adapters saved by peft (see that folder's README.md).
//
// Tolerances, with rel(a, b) = max|a − b| / max|b| over a whole tensor:
//   logits ≤ 1e-4, loss ≤ 1e-5 (relative), LoRA gradients ≤ 1e-3,
//   AdamW updates from PyTorch's gradients (new − old weights) ≤ 1e-3;
//   greedy tokens identical.
//
// Run directly, the file checks whichever kernels the process selects. Without
// SVC_KERNELS set it re-runs itself once per kernel path (native, portable) in
// child processes, so one `node --test` covers both.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loraLayersOf, loraParams, resolveTargetModules, zerosLike } from "../src/adapters/lora.js";
import { loadAdapter } from "../src/adapters/peft.js";
import { makeBatch } from "../src/data/batching.js";
import { createGenerator } from "../src/generation/generate.js";
import { ModelGraph } from "../src/graph/model.js";
import { getKernels, type Kernels } from "../src/kernels/index.js";
import { loadModel } from "../src/loading/load.js";
import { readSafetensors } from "../src/loading/safetensors.js";
import { needs } from "../src/testing/missing-piece.js";
import { AdamW, clipGradNorm } from "../src/training/optim.js";
import { rel } from "./golden-compare.js";

const here = dirname(fileURLToPath(import.meta.url));
// SVC_GOLDEN_DIR checks another folder of cases in the same layout instead, e.g.
// a fresh run of reference/check_transformers.py.
const folders = process.env.SVC_GOLDEN_DIR
  ? [process.env.SVC_GOLDEN_DIR]
  : ["fixtures", "fixtures-transformers"].map((name) => join(here, "..", "..", name));
const cases = folders.flatMap((folder) =>
  readdirSync(folder, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(folder, entry.name))
    .sort(),
);

interface Golden {
  input_ids: number[][];
  labels: number[][];
  lengths: number[];
  loss: number;
  lora: { r: number; alpha: number; targets: string[] };
  adamw: {
    lr: number;
    weight_decay: number;
    beta1: number;
    beta2: number;
    eps: number;
    max_grad_norm: number;
  };
  greedy: { prompt: number[]; base: number[]; lora: number[] };
  /** "transformers" where transformers and peft computed the values. */
  source?: string;
}

const requested = process.env.SVC_KERNELS;

if (requested === undefined) {
  for (const kind of ["native", "portable"] as const) {
    test(`golden suite on the ${kind} kernels`, (t) => {
      // NODE_TEST_CONTEXT would make the child's runner defer to this one
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const child = spawnSync(
        process.execPath,
        ["--test", "--test-reporter=tap", fileURLToPath(import.meta.url)],
        {
          env: { ...env, SVC_KERNELS: kind },
          encoding: "utf8",
        },
      );
      const output = `${child.stdout}${child.stderr}`;
      const unavailable = /# kernels unavailable: (.*)/.exec(output);
      if (kind === "native" && unavailable) {
        t.skip(needs("native kernels", `native kernels unavailable here (${unavailable[1]})`));
        return;
      }
      assert.equal(child.status, 0, output);
      assert.match(output, /# pass [1-9]/);
      assert.match(output, /# fail 0/);
    });
  }
} else {
  let kernels: Kernels;
  try {
    kernels = getKernels();
  } catch (error) {
    // The parent reports this as a skip of the native path (the addon is not built here).
    console.log(`# kernels unavailable: ${(error as Error).message.split("\n")[0]}`);
    process.exit(0);
  }
  if (kernels.name !== requested) {
    console.log(`# kernels unavailable: SVC_KERNELS=${requested} selected ${kernels.name}/${kernels.isa}`);
  }
  for (const dir of cases) {
    const name = `${basename(dirname(dir))}/${basename(dir)}`;
    const golden = JSON.parse(readFileSync(join(dir, "golden.json"), "utf8")) as Golden;
    const peer = golden.source === "transformers" ? "transformers" : "PyTorch";
    const expected = readSafetensors(join(dir, "golden.safetensors")).tensors;
    const tensor = (key: string) => {
      const t = expected.get(key);
      assert.ok(t, `golden tensor ${key}`);
      return t.data;
    };

    test(`${name}: logits match ${peer} (base and with the PEFT adapter) on ${kernels.name}/${kernels.isa}`, async () => {
      const model = await loadModel(dir);
      const adapted = await loadModel(dir, { adapter: join(dir, "adapter") });
      for (const [i, padded] of golden.input_ids.entries()) {
        const ids = padded.slice(0, golden.lengths[i]);
        const base = rel(model.logits(ids), tensor(`logits.${i}`));
        assert.ok(base <= 1e-4, `sequence ${i} base logits: rel ${base}`);
        const lora = rel(adapted.logits(ids), tensor(`logits_lora.${i}`));
        assert.ok(lora <= 1e-4, `sequence ${i} LoRA logits: rel ${lora}`);
      }
    });

    test(`${name}: loss, LoRA gradients and one clipped AdamW step match ${peer}`, async () => {
      const model = await loadModel(dir);
      const adapter = loadAdapter(join(dir, "adapter"));
      const lora = loraLayersOf(adapter, model.config);
      const gradAdapter = zerosLike(adapter);
      const grads = loraLayersOf(gradAdapter, model.config);
      const graph = new ModelGraph(model.config, model.weights);
      const examples = golden.input_ids.map((padded, i) => ({
        inputIds: Int32Array.from(padded.slice(0, golden.lengths[i])),
        labels: Int32Array.from(golden.labels[i].slice(0, golden.lengths[i])),
      }));
      const batch = makeBatch(examples, 2);
      let count = 0;
      for (const t of batch.targets) if (t >= 0) count++;
      const { lossSum } = graph.forward(batch, lora, 1 / count);
      const loss = lossSum / count;
      assert.ok(Math.abs(loss - golden.loss) <= 1e-5 * golden.loss, `loss ${loss} vs ${golden.loss}`);
      graph.backward(lora, grads);

      const gradOf = new Map<Float32Array, Float32Array>();
      const params = loraParams(adapter);
      const gradList = loraParams(gradAdapter);
      for (const [i, p] of params.entries()) gradOf.set(p, gradList[i]);
      let checked = 0;
      for (const [tensorName, param] of adapter.tensors) {
        const g = gradOf.get(param);
        assert.ok(g, tensorName);
        const r = rel(g, tensor(`grad.${tensorName}`));
        assert.ok(r <= 1e-3, `gradient of ${tensorName}: rel ${r}`);
        checked++;
      }
      assert.equal(checked, golden.lora.targets.length * 2 * model.config.numHiddenLayers);
      // PEFT's "all-linear" (what the golden adapter targets) is the engine's
      assert.deepEqual(
        resolveTargetModules(model.config, "all-linear").sort(),
        [...golden.lora.targets].sort(),
      );

      // The step starts from PyTorch's own gradients: AdamW's first step is
      // ≈ lr·sign(g), so float noise in a gradient entry near eps would flip
      // it; the gradients themselves were compared above.
      for (const [tensorName, param] of adapter.tensors) {
        (gradOf.get(param) as Float32Array).set(tensor(`grad.${tensorName}`));
      }
      const before = params.map((p) => p.slice());
      const { lr, weight_decay, beta1, beta2, eps, max_grad_norm } = golden.adamw;
      clipGradNorm(gradList, max_grad_norm);
      new AdamW(params, { beta1, beta2, eps, weightDecay: weight_decay }).update(gradList, lr);
      for (const [i, p] of params.entries()) {
        const name = [...adapter.tensors].find(([, t]) => t === p)?.[0] as string;
        const want = tensor(`updated.${name}`);
        const delta = p.map((v, j) => v - before[i][j]);
        const wantDelta = want.map((v, j) => v - before[i][j]);
        const r = rel(delta, wantDelta);
        assert.ok(r <= 1e-3, `AdamW update of ${name}: rel ${r}`);
      }
    });

    test(`${name}: greedy continuation matches ${peer} (full forward and the KV-cache generator)`, async () => {
      const model = await loadModel(dir);
      const adapted = model.withAdapter(loadAdapter(join(dir, "adapter")));
      const V = model.config.vocabSize;
      for (const [view, want] of [
        [model, golden.greedy.base],
        [adapted, golden.greedy.lora],
      ] as const) {
        const ids = [...golden.greedy.prompt];
        for (let i = 0; i < want.length; i++) {
          const logits = view.logits(ids).subarray((ids.length - 1) * V);
          let best = 0;
          for (let j = 1; j < V; j++) if (logits[j] > logits[best]) best = j;
          ids.push(best);
        }
        assert.deepEqual(ids.slice(golden.greedy.prompt.length), want);

        // The generator stops at an end-of-turn token; compare what it produced.
        const tokens: number[] = [];
        const stream = createGenerator(view).generate({
          promptIds: golden.greedy.prompt,
          maxTokens: want.length,
          temperature: 0,
          adapter: view.adapter,
        });
        for await (const chunk of stream) tokens.push(chunk.tokenId);
        assert.ok(tokens.length > 0);
        assert.deepEqual(tokens, want.slice(0, tokens.length));
      }
    });
  }
}
