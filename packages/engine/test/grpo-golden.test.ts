// A whole GRPO update against PyTorch: fixtures/<case>/grpo.json and
// grpo.safetensors, written by reference/make_grpo_fixtures.py from the papers'
// formulas on the case's random model and PEFT adapter. Two groups of three
// fixed completions (sampling switched off), their rewards turned into group
// advantages, and the engine's update pass (grpo-step.ts grpoPass, one
// micro-batch per group, rescaled to the batch's token normaliser) against
// torch.autograd, without and with the KL term (the reference: the adapter
// off). Tolerances as the preference golden's: loss ≤ 1e-5 relative, LoRA
// gradients ≤ 1e-4 (max|a − b| / max|b| over each tensor).
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loraLayersOf, loraParams, zerosLike } from "../src/adapters/lora.js";
import { loadAdapter } from "../src/adapters/peft.js";
import { ModelGraph } from "../src/graph/model.js";
import { getKernels } from "../src/kernels/index.js";
import { loadModel } from "../src/loading/load.js";
import { readSafetensors } from "../src/loading/safetensors.js";
import { DEFAULT_GRPO, groupAdvantages } from "../src/training/grpo-objective.js";
import { grpoPass } from "../src/training/grpo-step.js";
import { rel } from "./golden-compare.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "..", "..", "fixtures");
const cases = readdirSync(fixtures)
  .map((name) => join(fixtures, name))
  .filter((dir) => existsSync(join(dir, "grpo.json")))
  .sort();

interface GrpoGolden {
  sequences: number[][];
  labels: number[][];
  rewards: number[];
  groupSize: number;
  advantages: number[];
  settings: Record<string, { beta: number; epsilon: number; loss: number }>;
}

test("the GRPO fixtures exist (two families)", () => {
  assert.equal(cases.length, 2, `cases with grpo.json: ${cases.join(", ")}`);
});

for (const dir of cases) {
  const golden = JSON.parse(readFileSync(join(dir, "grpo.json"), "utf8")) as GrpoGolden;
  const expected = readSafetensors(join(dir, "grpo.safetensors")).tensors;
  for (const [name, want] of Object.entries(golden.settings)) {
    const kern = getKernels();
    test(`${dir.split("/").at(-1)} ${name}: a whole GRPO update (loss, LoRA gradients) matches PyTorch on ${kern.name}/${kern.isa}`, async () => {
      const model = await loadModel(dir);
      const adapter = loadAdapter(join(dir, "adapter"));
      const lora = loraLayersOf(adapter, model.config);
      const gradAdapter = zerosLike(adapter);
      const grads = loraLayersOf(gradAdapter, model.config);
      const graph = new ModelGraph(model.config, model.weights);
      const { advantages, zeroGroups } = groupAdvantages(golden.rewards, golden.groupSize);
      assert.deepEqual(zeroGroups, [false, false]);
      assert.ok(rel(advantages, golden.advantages) <= 1e-12, "advantages");
      const examples = golden.sequences.map((ids, i) => ({
        inputIds: Int32Array.from(ids),
        labels: Int32Array.from(golden.labels[i]),
      }));
      const batchTokens = golden.labels.reduce((s, l) => s + l.filter((x) => x >= 0).length, 0);
      const settings = { ...DEFAULT_GRPO, beta: want.beta, epsilon: want.epsilon, epsilonHigh: want.epsilon };
      let loss = 0;
      for (let start = 0; start < examples.length; start += golden.groupSize) {
        const members = Array.from({ length: golden.groupSize }, (_, k) => start + k);
        const part = grpoPass(
          members.map((i) => examples[i]),
          members.map((i) => advantages[i]),
          { graph, lora, grads, reference: null, settings, pad: 2, batchTokens, batchKept: examples.length },
        );
        loss += part.loss;
      }
      assert.ok(Math.abs(loss - want.loss) <= 1e-5 * Math.abs(want.loss), `loss ${loss} vs ${want.loss}`);
      const params = loraParams(adapter);
      const gradList = loraParams(gradAdapter);
      let checked = 0;
      for (const [tensorName, param] of adapter.tensors) {
        const g = gradList[params.indexOf(param)];
        const t = expected.get(`${name}.grad.${tensorName}`);
        assert.ok(t, `fixture gradient ${tensorName}`);
        const r = rel(g, t.data);
        assert.ok(r <= 1e-4, `gradient of ${tensorName}: rel ${r}`);
        checked++;
      }
      assert.ok(checked >= 4, `${checked} gradients checked`);
    });
  }
}
