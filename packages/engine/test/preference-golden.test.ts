// DPO and SimPO against PyTorch: fixtures/<case>/preference.json and
// preference.safetensors, written by reference/make_preference_fixtures.py from
// the papers' formulas on the case's random model and PEFT adapter (the
// reference policy: the same model with the adapter off). One micro-batch of
// two pairs (chosen and rejected side by side, as training batches them).
// Tolerances, rel(a, b) = max|a − b| / max|b| over a tensor: loss ≤ 1e-5
// (relative), rewards ≤ 1e-5 (absolute, they are O(1)), LoRA gradients ≤ 1e-4.
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
import { type PreferenceSettings, resolvePreference } from "../src/training/preference-loss.js";
import { pairPass, ReferenceLogProbs, type TokenizedPair } from "../src/training/preference-step.js";
import { rel } from "./golden-compare.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "..", "..", "fixtures");
const cases = readdirSync(fixtures)
  .map((name) => join(fixtures, name))
  .filter((dir) => existsSync(join(dir, "preference.json")))
  .sort();

interface PreferenceGolden {
  sequences: number[][];
  labels: number[][];
  losses: Record<
    string,
    { settings: PreferenceSettings; loss: number; rewards: { chosen: number; rejected: number }[] }
  >;
}

test("the preference fixtures exist (three families)", () => {
  assert.equal(cases.length, 3, `cases with preference.json: ${cases.join(", ")}`);
});

for (const dir of cases) {
  const golden = JSON.parse(readFileSync(join(dir, "preference.json"), "utf8")) as PreferenceGolden;
  const expected = readSafetensors(join(dir, "preference.safetensors")).tensors;
  for (const [name, want] of Object.entries(golden.losses)) {
    const kern = getKernels();
    test(`${dir.split("/").at(-1)} ${name}: loss, rewards and LoRA gradients match PyTorch on ${kern.name}/${kern.isa}`, async () => {
      const model = await loadModel(dir);
      const adapter = loadAdapter(join(dir, "adapter"));
      const lora = loraLayersOf(adapter, model.config);
      const gradAdapter = zerosLike(adapter);
      const grads = loraLayersOf(gradAdapter, model.config);
      const graph = new ModelGraph(model.config, model.weights);
      const example = (i: number) => ({
        inputIds: Int32Array.from(golden.sequences[i]),
        labels: Int32Array.from(golden.labels[i]),
      });
      const pairs: TokenizedPair[] = [0, 1].map((p) => ({
        chosen: example(2 * p),
        rejected: example(2 * p + 1),
      }));
      const settings = resolvePreference({
        loss: want.settings.loss,
        beta: want.settings.beta,
        labelSmoothing: want.settings.labelSmoothing,
        ...(want.settings.loss === "simpo" ? { gamma: want.settings.gamma } : {}),
      });
      const losses = pairPass(pairs, [0, 1], {
        graph,
        lora,
        grads,
        gradScale: 1 / 2,
        settings,
        pad: 2,
        reference: new ReferenceLogProbs(2),
        referenceLora: null,
      });
      const loss = (losses[0].loss + losses[1].loss) / 2;
      assert.ok(Math.abs(loss - want.loss) <= 1e-5 * want.loss, `loss ${loss} vs ${want.loss}`);
      for (const [i, l] of losses.entries()) {
        assert.ok(Math.abs(l.chosenReward - want.rewards[i].chosen) <= 1e-5, `pair ${i} chosen reward`);
        assert.ok(Math.abs(l.rejectedReward - want.rewards[i].rejected) <= 1e-5, `pair ${i} rejected reward`);
      }
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
      assert.ok(checked >= 14, `${checked} gradients checked`);
    });
  }
}
