// GRPO's pieces against their definitions and against PyTorch
// (reference/grpo_objective.py, torch.autograd in float64; /usr/bin/python3 or
// SVC_PYTHON, as the "torch" piece is probed): advantages and
// the zero-variance rule, the clipped surrogate with the k3 KL term on fixed
// log-probs, and both normalisations; values and gradients within 1e-6.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { isEngineError } from "../errors.js";
import { Rng } from "../rng.js";
import { needs } from "../testing/missing-piece.js";
import {
  type CompletionLogProbs,
  DEFAULT_GRPO,
  type GrpoSettings,
  groupAdvantages,
  grpoLoss,
} from "./grpo-objective.js";

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, "..", "..", "..", "reference", "grpo_objective.py");
const python = process.env.SVC_PYTHON ?? "/usr/bin/python3";

test("advantages: reward minus the group mean, over the Bessel-corrected std + eps; equal rewards give exactly 0", () => {
  const { advantages, zeroGroups } = groupAdvantages([1, 0, 0, 1, 0.1, 0.1, 0.1, 0.1], 4);
  const std = Math.sqrt(1 / 3); // deviations ±0.5, four of them, over n − 1
  assert.deepEqual(
    [...advantages.slice(0, 4)].map((a) => Math.abs(a - (a > 0 ? 0.5 : -0.5) / (std + 1e-4)) < 1e-15),
    [true, true, true, true],
  );
  assert.deepEqual([...advantages.slice(4)], [0, 0, 0, 0]); // not 0.1 − 0.10000000000000002
  assert.deepEqual(zeroGroups, [false, true]);
  assert.deepEqual([...groupAdvantages([3, 1], 2, false).advantages], [1, -1]);
});

test("bad rewards and groups are refused, naming the index", () => {
  const refused = (f: () => unknown, message: RegExp) =>
    assert.throws(f, (e) => isEngineError(e, "invalid_argument") && message.test(e.message));
  refused(() => groupAdvantages([1, Number.NaN], 2), /reward 1 is NaN/);
  refused(() => groupAdvantages([1, Number.POSITIVE_INFINITY], 2), /reward 1 is Infinity/);
  refused(() => groupAdvantages([1, 2, 3], 2), /whole groups of 2/);
  refused(() => groupAdvantages([1], 1), /groupSize must be an integer >= 2/);
  refused(
    () => grpoLoss([{ logprobs: [-1] }], [1], [true], { ...DEFAULT_GRPO, beta: 0.1 }),
    /needs refLogprobs/,
  );
});

test("on-policy, no KL: the loss is −mean(A) per token and each token's weight −A / tokens", () => {
  const completions = [{ logprobs: [-1, -2] }, { logprobs: [-0.5] }];
  const out = grpoLoss(completions, [2, -1], [true, true]);
  assert.ok(Math.abs(out.loss - -(2 + 2 - 1) / 3) < 1e-15);
  assert.deepEqual(
    out.grads.map((g) => [...g]),
    [[-2 / 3, -2 / 3], [1 / 3]],
  );
  // a dropped completion adds nothing: not to the loss, the gradient or the token count
  const dropped = grpoLoss(completions, [2, -1], [true, false]);
  assert.equal(dropped.tokens, 2);
  assert.deepEqual([...dropped.grads[1]], [0]);
});

test("the gradient matches finite differences of the loss, clipped tokens and KL included", () => {
  const rng = new Rng(3);
  const completions = randomCompletions(rng, [3, 5, 2]);
  const settings: GrpoSettings = { ...DEFAULT_GRPO, beta: 0.3, epsilonHigh: 0.28 };
  for (const normalization of ["token", "sequence"] as const) {
    const s = { ...settings, normalization };
    const base = grpoLoss(completions, [1.2, -0.7, 0.4], [true, true, true], s);
    const h = 1e-6;
    for (const [i, c] of completions.entries())
      for (let t = 0; t < c.logprobs.length; t++) {
        const bumped = completions.map((d, j) => {
          if (j !== i) return d;
          const logprobs = [...d.logprobs];
          logprobs[t] += h;
          return { ...d, logprobs };
        });
        const fd = (grpoLoss(bumped, [1.2, -0.7, 0.4], [true, true, true], s).loss - base.loss) / h;
        assert.ok(
          Math.abs(fd - base.grads[i][t]) < 1e-5,
          `${normalization} ${i}/${t}: ${fd} vs ${base.grads[i][t]}`,
        );
      }
  }
});

function randomCompletions(rng: Rng, lengths: number[]): (CompletionLogProbs & { logprobs: number[] })[] {
  const draw = (n: number, f: () => number) => Array.from({ length: n }, f);
  return lengths.map((n) => {
    const logprobs = draw(n, () => -0.05 - 3 * rng.next());
    // πold up to ±0.5 away: ratios from 0.6 to 1.65, so both clips are crossed
    const oldLogprobs = logprobs.map((lp) => lp + (rng.next() - 0.5));
    const refLogprobs = logprobs.map((lp) => lp + 1.5 * (rng.next() - 0.5));
    return { logprobs, oldLogprobs, refLogprobs };
  });
}

function torchMissing(): string | null {
  // find_spec looks torch up without importing it (the import is the slow part)
  const probe = spawnSync(python, [
    "-c",
    "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)",
  ]);
  return probe.status === 0 ? null : `${python} has no torch`;
}

test("against PyTorch: advantages, loss and d loss / d logπθ within 1e-6 on fixed log-probs", (t) => {
  const missing = torchMissing();
  if (missing) {
    t.skip(needs("torch", missing));
    return;
  }
  const rng = new Rng(11);
  const G = 4;
  // three groups: the middle one all equal (dropped), lengths 1..9 tokens
  const rewards = [0.9, 0.1, 0.5, 0.0, 0.3, 0.3, 0.3, 0.3, 1, 0, 0, 1];
  const completions = randomCompletions(
    rng,
    rewards.map((_, i) => 1 + ((i * 7) % 9)),
  );
  const cases: GrpoSettings[] = [
    { ...DEFAULT_GRPO },
    { ...DEFAULT_GRPO, beta: 0.04, epsilonHigh: 0.28 },
    { ...DEFAULT_GRPO, beta: 0.1, normalization: "sequence", scaleRewards: false },
    { ...DEFAULT_GRPO, beta: 0.5, epsilon: 0.1, epsilonHigh: 0.1, normalization: "sequence" },
  ];
  const ours = cases.map((settings) => {
    const { advantages, zeroGroups } = groupAdvantages(rewards, G, settings.scaleRewards);
    const keep = rewards.map((_, i) => !zeroGroups[Math.floor(i / G)]);
    return { advantages, zeroGroups, loss: grpoLoss(completions, advantages, keep, settings) };
  });
  // one Python process for every case: importing torch is the slow part
  const run = spawnSync(python, [script], {
    encoding: "utf8",
    input: JSON.stringify(
      cases.map((settings) => ({
        rewards,
        group_size: G,
        scale: settings.scaleRewards,
        eps: 1e-4,
        epsilon: settings.epsilon,
        epsilon_high: settings.epsilonHigh,
        beta: settings.beta,
        normalization: settings.normalization,
        completions: completions.map((c) => ({
          logprobs: c.logprobs,
          old_logprobs: c.oldLogprobs,
          ref_logprobs: c.refLogprobs,
        })),
      })),
    ),
  });
  assert.equal(run.status, 0, run.stderr);
  const answers = JSON.parse(run.stdout) as {
    advantages: number[];
    zero_groups: boolean[];
    loss: number;
    grads: number[][];
  }[];
  let compared = 0;
  for (const [k, torch] of answers.entries()) {
    const { advantages, zeroGroups, loss } = ours[k];
    assert.deepEqual(zeroGroups, torch.zero_groups);
    for (const [i, a] of torch.advantages.entries())
      assert.ok(Math.abs(a - advantages[i]) < 1e-6, `advantage ${i}`);
    assert.ok(
      Math.abs(loss.loss - torch.loss) < 1e-6,
      `${JSON.stringify(cases[k])}: ${loss.loss} vs ${torch.loss}`,
    );
    for (const [i, g] of torch.grads.entries())
      for (const [t, v] of g.entries()) {
        assert.ok(Math.abs(v - loss.grads[i][t]) < 1e-6, `grad ${i}/${t}: ${loss.grads[i][t]} vs ${v}`);
        compared++;
      }
    assert.ok(loss.clipFraction > 0, "the case crosses a clip");
  }
  assert.ok(compared > 150, `${compared} gradients compared`);
});
