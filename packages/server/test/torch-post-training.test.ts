// DPO, SimPO and GRPO on the torch backend against the engine (packages/trainer-torch
// on the CPU, fp32, a tiny fixture model): the same pairs, seed and hyperparameters
// give the same first-step loss (1e-5 relative) and the same steps after it (5e-4;
// measured about 3e-6 for DPO, 5e-5 for SimPO at learning rate 5e-3), the same
// preference figures and eval figures (5e-4), and torch resumes the engine's DPO
// checkpoint to the same losses; a GRPO step with fixed completions (sampling
// switched off, the same scorer) gives the same loss and the same adapter update
// on both backends, with a zero-advantage group and the KL term in it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, it } from "node:test";
import {
  type GrpoRow,
  type GrpoTrainHyperparameters,
  loadModel,
  type Model,
  type PreferenceRow,
  type PreferenceTrainHyperparameters,
  preparePairSets,
  trainGrpo,
  trainPreference,
} from "@svc/engine";
import { needs } from "@svc/engine/testing";
import { torchGrpoPrompts, torchScorer } from "../src/worker/torch-grpo.js";
import { TRAINER_TORCH_DIR, writeTorchGrpoJob, writeTorchPreferenceJob } from "../src/worker/torch-job.js";
import type { GraderScorer } from "../src/worker/training-grpo.js";
import {
  FIXTURES,
  hasTorch,
  largestAdapterDifference,
  runTrainer,
  TORCH_PYTHON,
  torchScratch,
  trainerEvents,
} from "./torch-harness.js";

const PYTHON = TORCH_PYTHON;
const scratch = torchScratch("post-training");
const relative = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(a), 1e-12);

const pairs: PreferenceRow[] = Array.from({ length: 14 }, (_, i) => ({
  prompt: [{ role: "user", content: `Name a colour for ${i}${" please".repeat(i % 3)}.` }],
  chosen: [{ role: "assistant", content: ["red", "green", "blue"][i % 3] }],
  rejected: [{ role: "assistant", content: `I would rather not say ${i}` }],
}));
const trainPairs = pairs.slice(0, 10);
const evalPairs = pairs.slice(10);

// biome-ignore lint/suspicious/noExplicitAny: progress events read by field
type Progress = any;

async function engineDpo(
  model: Model,
  h: PreferenceTrainHyperparameters,
  resumeFrom?: string,
  startAdapter?: string,
) {
  const steps: Progress[] = [];
  const checkpoints: { step: number; dir: string }[] = [];
  const outputDir = mkdtempSync(join(scratch, "engine-"));
  await trainPreference({
    model,
    trainSet: trainPairs,
    evalSet: evalPairs,
    hyperparameters: h,
    outputDir,
    resumeFrom,
    startAdapter,
    onProgress: (p) => void steps.push(p),
    onCheckpoint: (c) => void checkpoints.push(c),
  });
  return { steps, checkpoints, final: join(outputDir, "final") };
}

async function torchDpo(
  model: Model,
  h: PreferenceTrainHyperparameters,
  resumeFrom?: string,
  startAdapter?: string,
) {
  const file = writeTorchPreferenceJob(mkdtempSync(join(scratch, "job-")), {
    model,
    pairs: preparePairSets(model.tokenizer, trainPairs, evalPairs, h),
    hyperparameters: h,
    outputDir: mkdtempSync(join(scratch, "torch-")),
    resumeFrom: resumeFrom ?? null,
    startAdapter,
    threads: 1,
  });
  const [out] = await runTrainer(PYTHON, file);
  assert.equal(out.code, 0, out.err);
  const events = trainerEvents(out.out);
  return events.filter((e) => e.type === "progress").map((e) => e.progress);
}

const dpoHyperparameters = (more: Partial<PreferenceTrainHyperparameters> = {}) => ({
  lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
  maxSteps: 8,
  batchSize: 2,
  gradientAccumulationSteps: 2,
  learningRate: 5e-3,
  warmupSteps: 2,
  evalSteps: 4,
  seed: 3,
  maxLength: 48,
  ...more,
});

/** The preference figures of two steps agree within `tolerance` (relative, or absolute near 0). */
function samePreference(
  a: Record<string, number>,
  b: Record<string, number>,
  tolerance: number,
  what: string,
) {
  for (const key of ["chosenReward", "rejectedReward", "margin", "accuracy", "loss"]) {
    if (!(key in a)) continue;
    const close = Math.abs(a[key] - b[key]) <= tolerance * Math.max(1, Math.abs(a[key]));
    assert.ok(close, `${what} ${key}: engine ${a[key]}, torch ${b[key]}`);
  }
}

describe("DPO, SimPO and GRPO train the same on the engine and the torch backend", {
  skip: !hasTorch && needs("torch", `${PYTHON} has no torch`),
}, () => {
  for (const [name, fixture, more] of [
    ["DPO (sigmoid, label smoothing 0.1)", "llama-llama3-v5-f16", { labelSmoothing: 0.1 }],
    ["SimPO", "qwen3-v5-bf16", { loss: "simpo", beta: 2, gamma: 0.5 }],
  ] as const) {
    it(`${name}: the same first-step loss (1e-5), steps, preference and eval figures`, async (t) => {
      const model = await loadModel(join(FIXTURES, fixture));
      const h = dpoHyperparameters(more);
      const engine = await engineDpo(model, h);
      const torch = await torchDpo(model, h);
      assert.deepEqual(
        torch.map((s) => s.step),
        engine.steps.map((s) => s.step),
      );
      assert.ok(
        relative(engine.steps[0].loss, torch[0].loss) < 1e-5,
        `first-step loss: engine ${engine.steps[0].loss}, torch ${torch[0].loss}`,
      );
      engine.steps.forEach((e, i) => {
        assert.ok(
          relative(e.loss, torch[i].loss) < 5e-4,
          `step ${e.step}: engine ${e.loss}, torch ${torch[i].loss}`,
        );
        samePreference(e.preference, torch[i].preference, 5e-4, `step ${e.step}`);
        assert.equal(e.evalPreference === null, torch[i].evalPreference === null, `step ${e.step} eval`);
        if (e.evalPreference)
          samePreference(e.evalPreference, torch[i].evalPreference, 5e-4, `step ${e.step} eval`);
        assert.equal(torch[i].evalLoss, torch[i].evalPreference?.loss ?? null);
      });
      if (h.loss !== "simpo")
        assert.equal(torch[0].preference.accuracy, 0.5, "a fresh adapter ties every pair");
      const worst = Math.max(...engine.steps.map((e, i) => relative(e.loss, torch[i].loss)));
      t.diagnostic(
        `first-step loss ${engine.steps[0].loss} (relative difference ${relative(engine.steps[0].loss, torch[0].loss)}), worst step ${worst}`,
      );
      assert.ok(torch.at(-1).loss < torch[0].loss, "the runs learned something");
    });
  }

  it("DPO: torch resumes the engine's checkpoint to the same losses", async () => {
    const model = await loadModel(join(FIXTURES, "llama-llama3-v5-f16"));
    const h = dpoHyperparameters({ saveSteps: 4 });
    const engine = await engineDpo(model, h);
    const atFour = engine.checkpoints.find((c) => c.step === 4)!;
    const resumed = await torchDpo(model, h, atFour.dir);
    assert.deepEqual(
      resumed.map((s) => s.step),
      [5, 6, 7, 8],
    );
    for (const step of resumed) {
      const whole = engine.steps.find((s) => s.step === step.step);
      assert.ok(relative(whole.loss, step.loss) < 5e-4, `step ${step.step}: ${whole.loss} vs ${step.loss}`);
    }
  });

  it("DPO from a start adapter: that adapter, frozen, is the reference on both (ln 2 at step 1, the same steps)", async () => {
    const model = await loadModel(join(FIXTURES, "llama-llama3-v5-f16"));
    const start = (await engineDpo(model, dpoHyperparameters({ maxSteps: 4, seed: 5 }))).final;
    const h = dpoHyperparameters({ maxSteps: 6 });
    const engine = await engineDpo(model, h, undefined, start);
    const torch = await torchDpo(model, h, undefined, start);
    assert.ok(Math.abs(torch[0].loss - Math.log(2)) < 1e-6, `step 1 loss ${torch[0].loss}`);
    assert.equal(torch[0].preference.margin, 0);
    engine.steps.forEach((e, i) => {
      assert.ok(
        relative(e.loss, torch[i].loss) < 5e-4,
        `step ${e.step}: engine ${e.loss}, torch ${torch[i].loss}`,
      );
      samePreference(e.preference, torch[i].preference, 5e-4, `step ${e.step}`);
    });
  });

  it("GRPO: one step on fixed completions gives the same loss and adapter update (beta 0.04, a zero group)", async (t) => {
    const model = await loadModel(join(FIXTURES, "gemma3-v5-f32"));
    const rows: GrpoRow[] = ["the sea", "a dog", "the rain"].map((topic) => ({
      messages: [{ role: "user", content: `Write about ${topic}.` }],
    }));
    const G = 3;
    const h: GrpoTrainHyperparameters = {
      lora: { r: 4, alpha: 8, targetModules: ["all-linear"] },
      maxSteps: 1,
      batchSize: 2,
      gradientAccumulationSteps: 2,
      learningRate: 1e-2,
      seed: 9,
      maxLength: 64,
      numGenerations: G,
      beta: 0.04,
    };
    const prompts = torchGrpoPrompts(model.tokenizer, rows, 64);
    const [eos] = model.tokenizer.eosTokenIds;
    // per prompt (in the step's data order) G completions; the second prompt's are all alike: a zero group
    const fixed = (row: number, g: number): number[] =>
      row === 1
        ? [40, 41, 42, eos]
        : Array.from({ length: 3 + ((row + 2 * g) % 4) }, (_, t) => 30 + ((row * 7 + g * 5 + t * 3) % 60));
    const scorer: GraderScorer = {
      rewardNames: ["length"],
      rewardWeights: [1],
      score: (batch) => batch.map((item) => [item.completion.length]),
    };
    const decode = (ids: number[]) =>
      model.tokenizer.decode(
        ids.filter((id) => id !== eos),
        { skipSpecialTokens: true },
      );

    let engineStep: Progress = null;
    const engineOut = mkdtempSync(join(scratch, "engine-grpo-"));
    const order: number[][] = [];
    await trainGrpo({
      model,
      trainSet: rows,
      hyperparameters: h,
      outputDir: engineOut,
      ...scorer,
      sampleCompletions: (stepRows) => {
        order.push(stepRows);
        return stepRows.flatMap((row) =>
          Array.from({ length: G }, (_, g) => {
            const tokenIds = fixed(row, g);
            return { row, tokenIds, text: decode(tokenIds), finishReason: "stop" };
          }),
        );
      },
      onProgress: (p) => {
        engineStep = p;
      },
    });
    const fixedCompletions = order.map((stepRows) =>
      stepRows.flatMap((row) => Array.from({ length: G }, (_, g) => fixed(row, g))),
    );
    const torchOut = mkdtempSync(join(scratch, "torch-grpo-"));
    const file = writeTorchGrpoJob(mkdtempSync(join(scratch, "job-")), {
      model,
      prompts,
      hyperparameters: h,
      outputDir: torchOut,
      resumeFrom: null,
      threads: 1,
      fixedCompletions,
    });
    const events = await runScoredTrainer(file, torchScorer(rows, model.tokenizer, h, scorer));
    const torchStep = events.find((e) => e.type === "progress")!.progress;
    assert.ok(
      relative(engineStep.loss, torchStep.loss) < 1e-5,
      `loss: engine ${engineStep.loss}, torch ${torchStep.loss}`,
    );
    assert.equal(torchStep.grpo.zeroAdvantageFraction, engineStep.grpo.zeroAdvantageFraction);
    assert.ok(engineStep.grpo.zeroAdvantageFraction > 0, "the step has a zero group");
    assert.ok(
      relative(engineStep.grpo.kl, torchStep.grpo.kl) < 1e-3 ||
        Math.abs(engineStep.grpo.kl - torchStep.grpo.kl) < 1e-9,
    );
    assert.equal(torchStep.grpo.completionLength, engineStep.grpo.completionLength);
    assert.deepEqual(torchStep.grpo.rewards, engineStep.grpo.rewards);
    assert.deepEqual(torchStep.grpo.samples, engineStep.grpo.samples);
    const { worst, a } = largestAdapterDifference(join(engineOut, "final"), join(torchOut, "final"));
    let moved = 0;
    for (const values of a.tensors.values()) for (const v of values) moved = Math.max(moved, Math.abs(v));
    assert.ok(moved > 1e-3, "the step moved the adapter");
    assert.ok(worst < 1e-5, `largest adapter difference ${worst} (the update's largest value ${moved})`);
    t.diagnostic(
      `loss ${engineStep.loss} vs ${torchStep.loss}; largest adapter difference ${worst} of ${moved}`,
    );
  });
});

/** svc_trainer on a GRPO job file, its score requests answered as the worker answers them. */
async function runScoredTrainer(
  file: string,
  score: ReturnType<typeof torchScorer>,
  // biome-ignore lint/suspicious/noExplicitAny: events of every type, read by field
): Promise<any[]> {
  const child = spawn(PYTHON, ["-m", "svc_trainer", "--input", file, "--device", "cpu", "--stdin-commands"], {
    cwd: TRAINER_TORCH_DIR,
    env: { ...process.env, PYTHONPATH: TRAINER_TORCH_DIR },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  // biome-ignore lint/suspicious/noExplicitAny: events of every type
  const events: any[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    const event = JSON.parse(line);
    if (event.type === "score")
      void score(event).then((reply) => child.stdin.write(`${JSON.stringify(reply)}\n`));
    else events.push(event);
  });
  const code = await new Promise((resolve) => child.once("close", resolve));
  assert.equal(code, 0, err);
  assert.equal(events.at(-1)?.type, "result", err);
  return events;
}
